#loc15 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>} loc("a"), %arg1: tensor<64x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>} loc("b")) -> (tensor<4x64xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg2: tensor<1x64xf32> loc("shard_map:"(#loc15)), %arg3: tensor<16x64xf32> loc("shard_map:"(#loc15))) {
      %c = stablehlo.constant dense<64> : tensor<i32>
      %c_0 = stablehlo.constant dense<16> : tensor<i32>
      %c_1 = stablehlo.constant dense<4> : tensor<i32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %c_3 = stablehlo.constant dense<3> : tensor<i32>
      %c_4 = stablehlo.constant dense<0> : tensor<i32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %c_5 = stablehlo.constant dense<1> : tensor<ui32>
      %c_6 = stablehlo.constant dense<4> : tensor<ui32>
      %1 = stablehlo.partition_id : tensor<ui32>
      %2 = stablehlo.divide %1, %c_5 : tensor<ui32>
      %3 = stablehlo.remainder %2, %c_6 : tensor<ui32>
      %4 = stablehlo.convert %3 : (tensor<ui32>) -> tensor<i32>
      %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x64xf32>
      %6:6 = stablehlo.while(%iterArg = %4, %iterArg_7 = %arg2, %iterArg_8 = %c_4, %iterArg_9 = %c_4, %iterArg_10 = %5, %iterArg_11 = %arg3) : tensor<i32>, tensor<1x64xf32>, tensor<i32>, tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>
      cond {
        %16 = stablehlo.compare LT, %iterArg_8, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %16 : tensor<i1>
      } do {
        %16:3 = func.call @closed_call(%iterArg, %iterArg_7, %iterArg_9, %iterArg_10, %iterArg_11) : (tensor<i32>, tensor<1x64xf32>, tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>) -> (tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>)
        %17 = stablehlo.add %iterArg_8, %c_2 : tensor<i32>
        stablehlo.return %iterArg, %iterArg_7, %17, %16#0, %16#1, %16#2 : tensor<i32>, tensor<1x64xf32>, tensor<i32>, tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>
      }
      %7 = stablehlo.add %4, %c_3 : tensor<i32>
      %8 = func.call @remainder(%7, %c_1) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      %9 = stablehlo.multiply %8, %c_0 : tensor<i32>
      %10 = stablehlo.compare LT, %9, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %11 = stablehlo.add %9, %c : tensor<i32>
      %12 = stablehlo.select %10, %11, %9 : tensor<i1>, tensor<i32>
      %13 = stablehlo.dynamic_slice %arg2, %c_4, %12, sizes = [1, 16] : (tensor<1x64xf32>, tensor<i32>, tensor<i32>) -> tensor<1x16xf32>
      %14 = stablehlo.dot_general %13, %6#5, contracting_dims = [1] x [0] : (tensor<1x16xf32>, tensor<16x64xf32>) -> tensor<1x64xf32>
      %15 = stablehlo.add %6#4, %14 : tensor<1x64xf32>
      sdy.return %15 : tensor<1x64xf32>
    } : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<4x64xf32>
    return %0 : tensor<4x64xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32> loc(unknown), %arg1: tensor<1x64xf32> loc(unknown), %arg2: tensor<i32> loc(unknown), %arg3: tensor<1x64xf32> loc(unknown), %arg4: tensor<16x64xf32> loc(unknown)) -> (tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>) {
    %c = stablehlo.constant dense<64> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<16> : tensor<i32>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg2, %c_3 : tensor<i32>
    %1 = stablehlo.convert %arg2 : tensor<i32>
    %2 = stablehlo.add %arg0, %1 : tensor<i32>
    %3 = call @remainder(%2, %c_2) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %4 = stablehlo.multiply %3, %c_1 : tensor<i32>
    %5 = stablehlo.compare LT, %4, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.add %4, %c : tensor<i32>
    %7 = stablehlo.select %5, %6, %4 : tensor<i1>, tensor<i32>
    %8 = stablehlo.dynamic_slice %arg1, %c_0, %7, sizes = [1, 16] : (tensor<1x64xf32>, tensor<i32>, tensor<i32>) -> tensor<1x16xf32>
    %9 = stablehlo.dot_general %8, %arg4, contracting_dims = [1] x [0] : (tensor<1x16xf32>, tensor<16x64xf32>) -> tensor<1x64xf32>
    %10 = stablehlo.add %arg3, %9 : tensor<1x64xf32>
    %11 = "stablehlo.collective_permute"(%arg4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 3], [1, 0], [2, 1], [3, 2]]> : tensor<4x2xi64>}> : (tensor<16x64xf32>) -> tensor<16x64xf32>
    return %0, %10, %11 : tensor<i32>, tensor<1x64xf32>, tensor<16x64xf32>
  }
  func.func private @remainder(%arg0: tensor<i32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<i32> {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = call @_where(%1, %c, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.remainder %arg0, %2 : tensor<i32>
    %4 = stablehlo.compare NE, %3, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.compare LT, %3, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.compare LT, %2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.compare NE, %5, %6, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %8 = stablehlo.and %7, %4 : tensor<i1>
    %9 = stablehlo.add %3, %2 : tensor<i32>
    %10 = stablehlo.select %8, %9, %3 : tensor<i1>, tensor<i32>
    return %10 : tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1> loc(unknown), %arg1: tensor<i32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
}
