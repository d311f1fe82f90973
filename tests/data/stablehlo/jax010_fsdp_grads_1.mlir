#loc17 = loc(unknown)
#loc34 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<12x32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}]>} loc("w_in"), %arg1: tensor<12x64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"data"}]>} loc("w_out"), %arg2: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("x"), %arg3: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("y")) -> (tensor<12x32x64xf32> {jax.result_info = "result['w_in']", sdy.sharding = #sdy.sharding<@mesh, [{}, {"data"}, {}]>}, tensor<12x64x32xf32> {jax.result_info = "result['w_out']", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"data"}]>}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1, %arg2, %arg3) in_shardings=[<@mesh, [{}, {"data"}, {}]>, <@mesh, [{}, {}, {"data"}]>, <@mesh, [{"data"}, {}]>, <@mesh, [{"data"}, {}]>] out_shardings=[<@mesh, [{}, {"data"}, {}]>, <@mesh, [{}, {}, {"data"}]>] manual_axes={"data"} (%arg4: tensor<12x8x64xf32> loc("shard_map:"(#loc17)), %arg5: tensor<12x64x8xf32> loc("shard_map:"(#loc17)), %arg6: tensor<2x32xf32> loc("shard_map:"(#loc17)), %arg7: tensor<2x32xf32> loc("shard_map:"(#loc17))) {
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
      %cst_1 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
      %c = stablehlo.constant dense<1> : tensor<i32>
      %c_2 = stablehlo.constant dense<12> : tensor<i32>
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<12x2x32xf32>
      %2:5 = stablehlo.while(%iterArg = %arg4, %iterArg_5 = %arg5, %iterArg_6 = %c_3, %iterArg_7 = %arg6, %iterArg_8 = %1) : tensor<12x8x64xf32>, tensor<12x64x8xf32>, tensor<i32>, tensor<2x32xf32>, tensor<12x2x32xf32>
      cond {
        %13 = stablehlo.compare LT, %iterArg_6, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %13 : tensor<i1>
      } do {
        %13 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_6) : (tensor<12x8x64xf32>, tensor<i32>) -> tensor<8x64xf32>
        %14 = func.call @dynamic_index_in_dim_0(%iterArg_5, %iterArg_6) : (tensor<12x64x8xf32>, tensor<i32>) -> tensor<64x8xf32>
        %15:2 = func.call @closed_call(%iterArg_7, %13, %14) : (tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>) -> (tensor<2x32xf32>, tensor<2x32xf32>)
        %16 = func.call @dynamic_update_index_in_dim(%iterArg_8, %15#1, %iterArg_6) : (tensor<12x2x32xf32>, tensor<2x32xf32>, tensor<i32>) -> tensor<12x2x32xf32>
        %17 = stablehlo.add %iterArg_6, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_5, %17, %15#0, %16 : tensor<12x8x64xf32>, tensor<12x64x8xf32>, tensor<i32>, tensor<2x32xf32>, tensor<12x2x32xf32>
      }
      %3 = stablehlo.subtract %2#3, %arg7 : tensor<2x32xf32>
      %4 = stablehlo.divide %cst, %cst_0 : tensor<f32>
      %5 = stablehlo.multiply %cst_1, %4 : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<2x32xf32>
      %7 = stablehlo.multiply %3, %6 : tensor<2x32xf32>
      %8 = stablehlo.multiply %6, %3 : tensor<2x32xf32>
      %9 = stablehlo.add %7, %8 : tensor<2x32xf32>
      %10 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<12x8x64xf32>
      %11 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<12x64x8xf32>
      %12:7 = stablehlo.while(%iterArg = %2#4, %iterArg_5 = %arg4, %iterArg_6 = %arg5, %iterArg_7 = %c_3, %iterArg_8 = %9, %iterArg_9 = %10, %iterArg_10 = %11) : tensor<12x2x32xf32>, tensor<12x8x64xf32>, tensor<12x64x8xf32>, tensor<i32>, tensor<2x32xf32>, tensor<12x8x64xf32>, tensor<12x64x8xf32>
      cond {
        %13 = stablehlo.compare LT, %iterArg_7, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %13 : tensor<i1>
      } do {
        %13 = stablehlo.subtract %c_2, %iterArg_7 : tensor<i32>
        %14 = stablehlo.subtract %13, %c : tensor<i32>
        %15 = func.call @dynamic_index_in_dim_1(%iterArg, %14) : (tensor<12x2x32xf32>, tensor<i32>) -> tensor<2x32xf32>
        %16 = func.call @dynamic_index_in_dim(%iterArg_5, %14) : (tensor<12x8x64xf32>, tensor<i32>) -> tensor<8x64xf32>
        %17 = func.call @dynamic_index_in_dim_0(%iterArg_6, %14) : (tensor<12x64x8xf32>, tensor<i32>) -> tensor<64x8xf32>
        %18:3 = func.call @closed_call_2(%iterArg_8, %15, %16, %17) : (tensor<2x32xf32>, tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>) -> (tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>)
        %19 = func.call @dynamic_update_index_in_dim_3(%iterArg_9, %18#1, %14) : (tensor<12x8x64xf32>, tensor<8x64xf32>, tensor<i32>) -> tensor<12x8x64xf32>
        %20 = func.call @dynamic_update_index_in_dim_4(%iterArg_10, %18#2, %14) : (tensor<12x64x8xf32>, tensor<64x8xf32>, tensor<i32>) -> tensor<12x64x8xf32>
        %21 = stablehlo.add %iterArg_7, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_5, %iterArg_6, %21, %18#0, %19, %20 : tensor<12x2x32xf32>, tensor<12x8x64xf32>, tensor<12x64x8xf32>, tensor<i32>, tensor<2x32xf32>, tensor<12x8x64xf32>, tensor<12x64x8xf32>
      }
      sdy.return %12#5, %12#6 : tensor<12x8x64xf32>, tensor<12x64x8xf32>
    } : (tensor<12x32x64xf32>, tensor<12x64x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> (tensor<12x32x64xf32>, tensor<12x64x32xf32>)
    return %0#0, %0#1 : tensor<12x32x64xf32>, tensor<12x64x32xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<12x8x64xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<8x64xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 8, 64] : (tensor<12x8x64xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x64xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x8x64xf32>) -> tensor<8x64xf32>
    return %1 : tensor<8x64xf32>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<12x64x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<64x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 64, 8] : (tensor<12x64x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x64x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x64x8xf32>) -> tensor<64x8xf32>
    return %1 : tensor<64x8xf32>
  }
  func.func private @closed_call(%arg0: tensor<2x32xf32> loc(unknown), %arg1: tensor<8x64xf32> loc(unknown), %arg2: tensor<64x8xf32> loc(unknown)) -> (tensor<2x32xf32>, tensor<2x32xf32>) {
    %0 = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<8x64xf32>) -> tensor<32x64xf32>
    %1 = "stablehlo.all_gather"(%arg2) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<64x8xf32>) -> tensor<64x32xf32>
    %2 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0] : (tensor<2x32xf32>, tensor<32x64xf32>) -> tensor<2x64xf32>
    %3 = stablehlo.tanh %2 : tensor<2x64xf32>
    %4 = stablehlo.dot_general %3, %1, contracting_dims = [1] x [0] : (tensor<2x64xf32>, tensor<64x32xf32>) -> tensor<2x32xf32>
    %5 = stablehlo.add %arg0, %4 : tensor<2x32xf32>
    return %5, %arg0 : tensor<2x32xf32>, tensor<2x32xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<12x2x32xf32> loc(unknown), %arg1: tensor<2x32xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<12x2x32xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x32xf32>) -> tensor<1x2x32xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<12x2x32xf32>, tensor<1x2x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<12x2x32xf32>
    return %1 : tensor<12x2x32xf32>
  }
  func.func private @dynamic_index_in_dim_1(%arg0: tensor<12x2x32xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<2x32xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 2, 32] : (tensor<12x2x32xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x32xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x32xf32>) -> tensor<2x32xf32>
    return %1 : tensor<2x32xf32>
  }
  func.func private @closed_call_2(%arg0: tensor<2x32xf32> loc(unknown), %arg1: tensor<2x32xf32> loc(unknown), %arg2: tensor<8x64xf32> loc(unknown), %arg3: tensor<64x8xf32> loc(unknown)) -> (tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0:4 = stablehlo.optimization_barrier %arg1, %arg2, %arg3, %arg0 : tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>, tensor<2x32xf32>
    %1 = "stablehlo.all_gather"(%0#1) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<8x64xf32>) -> tensor<32x64xf32>
    %2 = "stablehlo.all_gather"(%0#2) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<64x8xf32>) -> tensor<64x32xf32>
    %3 = stablehlo.dot_general %0#0, %1, contracting_dims = [1] x [0] : (tensor<2x32xf32>, tensor<32x64xf32>) -> tensor<2x64xf32>
    %4 = stablehlo.tanh %3 : tensor<2x64xf32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x64xf32>
    %6 = stablehlo.subtract %5, %4 : tensor<2x64xf32>
    %7 = stablehlo.dot_general %0#3, %4, contracting_dims = [0] x [0] : (tensor<2x32xf32>, tensor<2x64xf32>) -> tensor<32x64xf32>
    %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<32x64xf32>) -> tensor<64x32xf32>
    %9 = stablehlo.dot_general %0#3, %2, contracting_dims = [1] x [1] : (tensor<2x32xf32>, tensor<64x32xf32>) -> tensor<2x64xf32>
    %10 = stablehlo.multiply %9, %6 : tensor<2x64xf32>
    %11 = stablehlo.multiply %10, %4 : tensor<2x64xf32>
    %12 = stablehlo.add %10, %11 : tensor<2x64xf32>
    %13 = stablehlo.dot_general %12, %0#0, contracting_dims = [0] x [0] : (tensor<2x64xf32>, tensor<2x32xf32>) -> tensor<64x32xf32>
    %14 = stablehlo.transpose %13, dims = [1, 0] : (tensor<64x32xf32>) -> tensor<32x64xf32>
    %15 = stablehlo.dot_general %12, %1, contracting_dims = [1] x [1] : (tensor<2x64xf32>, tensor<32x64xf32>) -> tensor<2x32xf32>
    %16 = stablehlo.add %0#3, %15 : tensor<2x32xf32>
    %17 = "stablehlo.reduce_scatter"(%8) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
    ^bb0(%arg4: tensor<f32> loc("reduce_scatter:"(#loc34)), %arg5: tensor<f32> loc("reduce_scatter:"(#loc34))):
      %19 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %19 : tensor<f32>
    }) : (tensor<64x32xf32>) -> tensor<64x8xf32>
    %18 = "stablehlo.reduce_scatter"(%14) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({
    ^bb0(%arg4: tensor<f32> loc("reduce_scatter:"(#loc34)), %arg5: tensor<f32> loc("reduce_scatter:"(#loc34))):
      %19 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %19 : tensor<f32>
    }) : (tensor<32x64xf32>) -> tensor<8x64xf32>
    return %16, %18, %17 : tensor<2x32xf32>, tensor<8x64xf32>, tensor<64x8xf32>
  }
  func.func private @dynamic_update_index_in_dim_3(%arg0: tensor<12x8x64xf32> loc(unknown), %arg1: tensor<8x64xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<12x8x64xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x64xf32>) -> tensor<1x8x64xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<12x8x64xf32>, tensor<1x8x64xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<12x8x64xf32>
    return %1 : tensor<12x8x64xf32>
  }
  func.func private @dynamic_update_index_in_dim_4(%arg0: tensor<12x64x8xf32> loc(unknown), %arg1: tensor<64x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<12x64x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<64x8xf32>) -> tensor<1x64x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<12x64x8xf32>, tensor<1x64x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<12x64x8xf32>
    return %1 : tensor<12x64x8xf32>
  }
}
