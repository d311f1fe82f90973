#loc16 = loc(unknown)
#loc23 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 6 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["stage"=6]> {stablehlo.mesh = {axes = [{name = "stage", size = 6 : i64}]}}
  func.func public @main(%arg0: tensor<6x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"stage"}, {}, {}]>} loc("p['w_in']"), %arg1: tensor<6x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"stage"}, {}, {}]>} loc("p['w_out']"), %arg2: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>} loc("a")) -> (tensor<4x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"stage"}, {}, {}]>, <@mesh, [{"stage"}, {}, {}]>, <@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"stage"} (%arg3: tensor<1x8x16xf32> loc("shard_map:"(#loc16)), %arg4: tensor<1x16x8xf32> loc("shard_map:"(#loc16)), %arg5: tensor<4x8xf32> loc("shard_map:"(#loc16))) {
      %c = stablehlo.constant dense<1> : tensor<i32>
      %c_0 = stablehlo.constant dense<9> : tensor<i32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %c_2 = stablehlo.constant dense<1> : tensor<ui32>
      %c_3 = stablehlo.constant dense<6> : tensor<ui32>
      %1 = stablehlo.partition_id : tensor<ui32>
      %2 = stablehlo.divide %1, %c_2 : tensor<ui32>
      %3 = stablehlo.remainder %2, %c_3 : tensor<ui32>
      %4 = stablehlo.convert %3 : (tensor<ui32>) -> tensor<i32>
      %5 = stablehlo.reshape %arg5 : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
      %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x8xf32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x1x8xf32>
      %8:8 = stablehlo.while(%iterArg = %5, %iterArg_4 = %4, %iterArg_5 = %arg3, %iterArg_6 = %arg4, %iterArg_7 = %c_1, %iterArg_8 = %c_1, %iterArg_9 = %6, %iterArg_10 = %7) : tensor<4x1x8xf32>, tensor<i32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>
      cond {
        %11 = stablehlo.compare LT, %iterArg_7, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %11 : tensor<i1>
      } do {
        %11:3 = func.call @closed_call(%iterArg, %iterArg_4, %iterArg_5, %iterArg_6, %iterArg_8, %iterArg_9, %iterArg_10) : (tensor<4x1x8xf32>, tensor<i32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>) -> (tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>)
        %12 = stablehlo.add %iterArg_7, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_4, %iterArg_5, %iterArg_6, %12, %11#0, %11#1, %11#2 : tensor<4x1x8xf32>, tensor<i32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>
      }
      %9 = "stablehlo.all_reduce"(%8#7) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32> loc("psum_invariant:"(#loc23)), %arg7: tensor<f32> loc("psum_invariant:"(#loc23))):
        %11 = stablehlo.add %arg6, %arg7 : tensor<f32>
        stablehlo.return %11 : tensor<f32>
      }) : (tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
      %10 = stablehlo.reshape %9 : (tensor<4x1x8xf32>) -> tensor<4x8xf32>
      sdy.return %10 : tensor<4x8xf32>
    } : (tensor<6x8x16xf32>, tensor<6x16x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x1x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown), %arg2: tensor<1x8x16xf32> loc(unknown), %arg3: tensor<1x16x8xf32> loc(unknown), %arg4: tensor<i32> loc(unknown), %arg5: tensor<1x8xf32> loc(unknown), %arg6: tensor<4x1x8xf32> loc(unknown)) -> (tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>) {
    %c = stablehlo.constant dense<false> : tensor<i1>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<3> : tensor<i32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg4, %c_3 : tensor<i32>
    %1 = stablehlo.minimum %arg4, %c_2 : tensor<i32>
    %2 = call @dynamic_index_in_dim(%arg0, %1) : (tensor<4x1x8xf32>, tensor<i32>) -> tensor<1x8xf32>
    %3 = stablehlo.compare EQ, %arg1, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = call @_where(%3, %2, %arg5) : (tensor<i1>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
    %5 = stablehlo.reshape %arg2 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    %6 = stablehlo.reshape %arg3 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    %7 = stablehlo.dot_general %4, %5, contracting_dims = [1] x [0] : (tensor<1x8xf32>, tensor<8x16xf32>) -> tensor<1x16xf32>
    %8 = stablehlo.tanh %7 : tensor<1x16xf32>
    %9 = stablehlo.dot_general %8, %6, contracting_dims = [1] x [0] : (tensor<1x16xf32>, tensor<16x8xf32>) -> tensor<1x8xf32>
    %10 = stablehlo.add %4, %9 : tensor<1x8xf32>
    %11 = stablehlo.subtract %arg4, %c_0 : tensor<i32>
    %12 = stablehlo.maximum %11, %c_1 : tensor<i32>
    %13 = call @dynamic_update_index_in_dim(%arg6, %10, %12) : (tensor<4x1x8xf32>, tensor<1x8xf32>, tensor<i32>) -> tensor<4x1x8xf32>
    %14 = stablehlo.compare EQ, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %15 = stablehlo.compare GE, %11, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %16 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<i1>
    %17 = stablehlo.compare NE, %15, %16, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %18 = stablehlo.convert %17 : tensor<i1>
    %19 = stablehlo.and %14, %18 : tensor<i1>
    %20 = call @_where_0(%19, %13, %arg6) : (tensor<i1>, tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x1x8xf32>
    %21 = "stablehlo.collective_permute"(%10) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]> : tensor<5x2xi64>}> : (tensor<1x8xf32>) -> tensor<1x8xf32>
    return %0, %21, %20 : tensor<i32>, tensor<1x8xf32>, tensor<4x1x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<4x1x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<1x8xf32> {
    %c = stablehlo.constant dense<4> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %2 = stablehlo.add %1, %c : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_0, %c_0, sizes = [1, 1, 8] : (tensor<4x1x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x1x8xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x1x8xf32>) -> tensor<1x8xf32>
    return %5 : tensor<1x8xf32>
  }
  func.func private @_where(%arg0: tensor<i1> loc(unknown), %arg1: tensor<1x8xf32> loc(unknown), %arg2: tensor<1x8xf32> loc(unknown)) -> tensor<1x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<1x8xf32>
    return %0 : tensor<1x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<4x1x8xf32> loc(unknown), %arg1: tensor<1x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<4x1x8xf32> {
    %c = stablehlo.constant dense<4> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<1x8xf32>) -> tensor<1x1x8xf32>
    %1 = stablehlo.compare LT, %arg2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.convert %arg2 : tensor<i32>
    %3 = stablehlo.add %2, %c : tensor<i32>
    %4 = stablehlo.select %1, %3, %arg2 : tensor<i1>, tensor<i32>
    %5 = stablehlo.dynamic_update_slice %arg0, %0, %4, %c_0, %c_0 : (tensor<4x1x8xf32>, tensor<1x1x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x1x8xf32>
    return %5 : tensor<4x1x8xf32>
  }
  func.func private @_where_0(%arg0: tensor<i1> loc(unknown), %arg1: tensor<4x1x8xf32> loc(unknown), %arg2: tensor<4x1x8xf32> loc(unknown)) -> tensor<4x1x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<4x1x8xf32>
    return %0 : tensor<4x1x8xf32>
  }
}
