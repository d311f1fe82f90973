#loc17 = loc(unknown)
#loc48 = loc(unknown)
#loc53 = loc(unknown)
#loc69 = loc(unknown)
#loc71 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["expert"=4]> {stablehlo.mesh = {axes = [{name = "expert", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<24x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"expert"}, {}]>} loc("x"), %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>} loc("r"), %arg2: tensor<4x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"expert"}, {}, {}]>} loc("a"), %arg3: tensor<4x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"expert"}, {}, {}]>} loc("b")) -> (tensor<24x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"expert"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2, %arg3) in_shardings=[<@mesh, [{"expert"}, {}]>, <@mesh, [{}, {}]>, <@mesh, [{"expert"}, {}, {}]>, <@mesh, [{"expert"}, {}, {}]>] out_shardings=[<@mesh, [{"expert"}, {}]>] manual_axes={"expert"} (%arg4: tensor<6x8xf32> loc("shard_map:"(#loc17)), %arg5: tensor<8x4xf32> loc("shard_map:"(#loc17)), %arg6: tensor<1x8x16xf32> loc("shard_map:"(#loc17)), %arg7: tensor<1x16x8xf32> loc("shard_map:"(#loc17))) {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %c = stablehlo.constant dense<0> : tensor<i32>
      %1 = stablehlo.dot_general %arg4, %arg5, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
      %2 = func.call @argmax(%1) : (tensor<6x4xf32>) -> tensor<6xi32>
      %3 = func.call @_one_hot(%2) : (tensor<6xi32>) -> tensor<6x4xi32>
      %4 = func.call @cumsum(%3) : (tensor<6x4xi32>) -> tensor<6x4xi32>
      %5 = stablehlo.subtract %4, %3 : tensor<6x4xi32>
      %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6x4xi32>
      %7 = stablehlo.add %5, %6 : tensor<6x4xi32>
      %8 = stablehlo.multiply %7, %3 : tensor<6x4xi32>
      %9 = stablehlo.reduce(%8 init: %c) applies stablehlo.add across dimensions = [1] : (tensor<6x4xi32>, tensor<i32>) -> tensor<6xi32>
      %10 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<6x4xi32>) -> tensor<6x4x1xi32>
      %11 = func.call @_one_hot_1(%9) : (tensor<6xi32>) -> tensor<6x2xi32>
      %12 = stablehlo.broadcast_in_dim %11, dims = [0, 2] : (tensor<6x2xi32>) -> tensor<6x1x2xi32>
      %13 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2] : (tensor<6x4x1xi32>) -> tensor<6x4x2xi32>
      %14 = stablehlo.broadcast_in_dim %12, dims = [0, 1, 2] : (tensor<6x1x2xi32>) -> tensor<6x4x2xi32>
      %15 = stablehlo.multiply %13, %14 : tensor<6x4x2xi32>
      %16 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6x4x2xi32>
      %17 = stablehlo.compare GT, %15, %16, SIGNED : (tensor<6x4x2xi32>, tensor<6x4x2xi32>) -> tensor<6x4x2xi1>
      %18 = stablehlo.reduce(%1 init: %cst_0) applies stablehlo.maximum across dimensions = [1] : (tensor<6x4xf32>, tensor<f32>) -> tensor<6xf32>
      %19 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %20 = stablehlo.maximum %19, %18 : tensor<6xf32>
      %21 = stablehlo.broadcast_in_dim %20, dims = [0] : (tensor<6xf32>) -> tensor<6x1xf32>
      %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x4xf32>
      %23 = stablehlo.subtract %1, %22 : tensor<6x4xf32>
      %24 = stablehlo.exponential %23 : tensor<6x4xf32>
      %25 = stablehlo.reduce(%24 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<6x4xf32>, tensor<f32>) -> tensor<6xf32>
      %26 = stablehlo.broadcast_in_dim %25, dims = [0] : (tensor<6xf32>) -> tensor<6x1xf32>
      %27 = stablehlo.broadcast_in_dim %26, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x4xf32>
      %28 = stablehlo.divide %24, %27 : tensor<6x4xf32>
      %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1] : (tensor<6x4xf32>) -> tensor<6x4x1xf32>
      %30 = func.call @_where(%17, %29, %c) : (tensor<6x4x2xi1>, tensor<6x4x1xf32>, tensor<i32>) -> tensor<6x4x2xf32>
      %31 = stablehlo.convert %17 : (tensor<6x4x2xi1>) -> tensor<6x4x2xf32>
      %32 = stablehlo.dot_general %31, %arg4, contracting_dims = [0] x [0] : (tensor<6x4x2xf32>, tensor<6x8xf32>) -> tensor<4x2x8xf32>
      %33 = "stablehlo.all_to_all"(%32) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}> : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
      %34 = stablehlo.reshape %arg6 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
      %35 = stablehlo.dot_general %33, %34, contracting_dims = [2] x [0] : (tensor<4x2x8xf32>, tensor<8x16xf32>) -> tensor<4x2x16xf32>
      %36 = stablehlo.tanh %35 : tensor<4x2x16xf32>
      %37 = stablehlo.reshape %arg7 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
      %38 = stablehlo.dot_general %36, %37, contracting_dims = [2] x [0] : (tensor<4x2x16xf32>, tensor<16x8xf32>) -> tensor<4x2x8xf32>
      %39 = "stablehlo.all_to_all"(%38) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}> : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
      %40 = stablehlo.dot_general %30, %39, contracting_dims = [2, 1] x [1, 0] : (tensor<6x4x2xf32>, tensor<4x2x8xf32>) -> tensor<6x8xf32>
      sdy.return %40 : tensor<6x8xf32>
    } : (tensor<24x8xf32>, tensor<8x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<24x8xf32>
    return %0 : tensor<24x8xf32>
  }
  func.func private @argmax(%arg0: tensor<6x4xf32> loc(callsite(#loc71 at #loc69))) -> tensor<6xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.iota dim = 1 : tensor<6x4xi32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<6x4xf32>, tensor<6x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<6xf32>, tensor<6xi32>)
     reducer(%arg1: tensor<f32> loc("reduce:"(#loc48)), %arg3: tensor<f32> loc("reduce:"(#loc48))) (%arg2: tensor<i32> loc("reduce:"(#loc48)), %arg4: tensor<i32> loc("reduce:"(#loc48)))  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<6xi32>
  }
  func.func private @_one_hot(%arg0: tensor<6xi32> loc(unknown)) -> tensor<6x4xi32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x4xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<6x1xi32>) -> tensor<6x4xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x4xi32>) -> tensor<6x4xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<6x4xi32>, tensor<6x4xi32>) -> tensor<6x4xi1>
    %5 = stablehlo.convert %4 : (tensor<6x4xi1>) -> tensor<6x4xi32>
    return %5 : tensor<6x4xi32>
  }
  func.func private @cumsum(%arg0: tensor<6x4xi32> loc(unknown)) -> tensor<6x4xi32> {
    %0 = call @cumsum_0(%arg0) : (tensor<6x4xi32>) -> tensor<6x4xi32>
    return %0 : tensor<6x4xi32>
  }
  func.func private @cumsum_0(%arg0: tensor<6x4xi32> loc(unknown)) -> tensor<6x4xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{padding = dense<[[5, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 6, 1>}> ({
    ^bb0(%arg1: tensor<i32> loc("reduce_window_sum:"(#loc53)), %arg2: tensor<i32> loc("reduce_window_sum:"(#loc53))):
      %2 = stablehlo.add %arg1, %arg2 : tensor<i32>
      stablehlo.return %2 : tensor<i32>
    }) : (tensor<6x4xi32>, tensor<i32>) -> tensor<6x4xi32>
    return %1 : tensor<6x4xi32>
  }
  func.func private @_one_hot_1(%arg0: tensor<6xi32> loc(unknown)) -> tensor<6x2xi32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x2xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<6x1xi32>) -> tensor<6x2xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x2xi32>) -> tensor<6x2xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<6x2xi32>, tensor<6x2xi32>) -> tensor<6x2xi1>
    %5 = stablehlo.convert %4 : (tensor<6x2xi1>) -> tensor<6x2xi32>
    return %5 : tensor<6x2xi32>
  }
  func.func private @_where(%arg0: tensor<6x4x2xi1> loc(unknown), %arg1: tensor<6x4x1xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<6x4x2xf32> {
    %0 = stablehlo.convert %arg2 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1, 2] : (tensor<6x4x1xf32>) -> tensor<6x4x2xf32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<6x4x2xf32>
    %3 = stablehlo.select %arg0, %1, %2 : tensor<6x4x2xi1>, tensor<6x4x2xf32>
    return %3 : tensor<6x4x2xf32>
  }
}
