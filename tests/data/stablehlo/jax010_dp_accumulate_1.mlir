#loc17 = loc(unknown)
#loc24 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<2x8x24xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>} loc("p['w_in']"), %arg1: tensor<2x24x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>} loc("p['w_out']"), %arg2: tensor<512x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("a"), %arg3: tensor<512x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("b")) -> (tensor<2x8x24xf32> {jax.result_info = "result['w_in']", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}, tensor<2x24x8xf32> {jax.result_info = "result['w_out']", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1, %arg2, %arg3) in_shardings=[<@mesh, [{}, {}, {}]>, <@mesh, [{}, {}, {}]>, <@mesh, [{"data"}, {}]>, <@mesh, [{"data"}, {}]>] out_shardings=[<@mesh, [{}, {}, {}]>, <@mesh, [{}, {}, {}]>] manual_axes={"data"} (%arg4: tensor<2x8x24xf32> loc("shard_map:"(#loc17)), %arg5: tensor<2x24x8xf32> loc("shard_map:"(#loc17)), %arg6: tensor<128x8xf32> loc("shard_map:"(#loc17)), %arg7: tensor<128x8xf32> loc("shard_map:"(#loc17))) {
      %cst = stablehlo.constant dense<8.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
      %c = stablehlo.constant dense<1> : tensor<i32>
      %c_1 = stablehlo.constant dense<8> : tensor<i32>
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.reshape %arg6 : (tensor<128x8xf32>) -> tensor<8x16x8xf32>
      %2 = stablehlo.reshape %arg7 : (tensor<128x8xf32>) -> tensor<8x16x8xf32>
      %3 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x8x24xf32>
      %4 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x24x8xf32>
      %5:7 = stablehlo.while(%iterArg = %1, %iterArg_4 = %2, %iterArg_5 = %arg4, %iterArg_6 = %arg5, %iterArg_7 = %c_2, %iterArg_8 = %3, %iterArg_9 = %4) : tensor<8x16x8xf32>, tensor<8x16x8xf32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<i32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>
      cond {
        %16 = stablehlo.compare LT, %iterArg_7, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %16 : tensor<i1>
      } do {
        %16 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_7) : (tensor<8x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
        %17 = func.call @dynamic_index_in_dim(%iterArg_4, %iterArg_7) : (tensor<8x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
        %18:2 = func.call @closed_call(%iterArg_5, %iterArg_6, %iterArg_8, %iterArg_9, %16, %17) : (tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> (tensor<2x8x24xf32>, tensor<2x24x8xf32>)
        %19 = stablehlo.add %iterArg_7, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_4, %iterArg_5, %iterArg_6, %19, %18#0, %18#1 : tensor<8x16x8xf32>, tensor<8x16x8xf32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<i32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>
      }
      %6 = "stablehlo.all_reduce"(%5#5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg8: tensor<f32> loc("psum_invariant:"(#loc24)), %arg9: tensor<f32> loc("psum_invariant:"(#loc24))):
        %16 = stablehlo.add %arg8, %arg9 : tensor<f32>
        stablehlo.return %16 : tensor<f32>
      }) : (tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
      %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8x24xf32>
      %8 = stablehlo.divide %6, %7 : tensor<2x8x24xf32>
      %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x24xf32>
      %10 = stablehlo.divide %8, %9 : tensor<2x8x24xf32>
      %11 = "stablehlo.all_reduce"(%5#6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg8: tensor<f32> loc("psum_invariant:"(#loc24)), %arg9: tensor<f32> loc("psum_invariant:"(#loc24))):
        %16 = stablehlo.add %arg8, %arg9 : tensor<f32>
        stablehlo.return %16 : tensor<f32>
      }) : (tensor<2x24x8xf32>) -> tensor<2x24x8xf32>
      %12 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x24x8xf32>
      %13 = stablehlo.divide %11, %12 : tensor<2x24x8xf32>
      %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x24x8xf32>
      %15 = stablehlo.divide %13, %14 : tensor<2x24x8xf32>
      sdy.return %10, %15 : tensor<2x8x24xf32>, tensor<2x24x8xf32>
    } : (tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<512x8xf32>, tensor<512x8xf32>) -> (tensor<2x8x24xf32>, tensor<2x24x8xf32>)
    return %0#0, %0#1 : tensor<2x8x24xf32>, tensor<2x24x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<8x16x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 16, 8] : (tensor<8x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @closed_call(%arg0: tensor<2x8x24xf32> loc(unknown), %arg1: tensor<2x24x8xf32> loc(unknown), %arg2: tensor<2x8x24xf32> loc(unknown), %arg3: tensor<2x24x8xf32> loc(unknown), %arg4: tensor<16x8xf32> loc(unknown), %arg5: tensor<16x8xf32> loc(unknown)) -> (tensor<2x8x24xf32>, tensor<2x24x8xf32>) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x16x8xf32>
    %1 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x16x24xf32>
    %2 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x16x24xf32>
    %3:8 = stablehlo.while(%iterArg = %arg0, %iterArg_5 = %arg1, %iterArg_6 = %cst_3, %iterArg_7 = %c_2, %iterArg_8 = %arg4, %iterArg_9 = %0, %iterArg_10 = %1, %iterArg_11 = %2) : tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<f32>, tensor<i32>, tensor<16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x24xf32>, tensor<2x16x24xf32>
    cond {
      %17 = stablehlo.compare LT, %iterArg_7, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %17 : tensor<i1>
    } do {
      %17 = func.call @dynamic_index_in_dim_0(%iterArg, %iterArg_7) : (tensor<2x8x24xf32>, tensor<i32>) -> tensor<8x24xf32>
      %18 = func.call @dynamic_index_in_dim_1(%iterArg_5, %iterArg_7) : (tensor<2x24x8xf32>, tensor<i32>) -> tensor<24x8xf32>
      %19:4 = func.call @closed_call_2(%iterArg_6, %iterArg_8, %17, %18) : (tensor<f32>, tensor<16x8xf32>, tensor<8x24xf32>, tensor<24x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x24xf32>)
      %20 = func.call @dynamic_update_index_in_dim(%iterArg_9, %19#1, %iterArg_7) : (tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<2x16x8xf32>
      %21 = func.call @dynamic_update_index_in_dim_3(%iterArg_10, %19#2, %iterArg_7) : (tensor<2x16x24xf32>, tensor<16x24xf32>, tensor<i32>) -> tensor<2x16x24xf32>
      %22 = func.call @dynamic_update_index_in_dim_3(%iterArg_11, %19#3, %iterArg_7) : (tensor<2x16x24xf32>, tensor<16x24xf32>, tensor<i32>) -> tensor<2x16x24xf32>
      %23 = stablehlo.add %iterArg_7, %c : tensor<i32>
      stablehlo.return %iterArg, %iterArg_5, %iterArg_6, %23, %19#0, %20, %21, %22 : tensor<2x8x24xf32>, tensor<2x24x8xf32>, tensor<f32>, tensor<i32>, tensor<16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x24xf32>, tensor<2x16x24xf32>
    }
    %4 = stablehlo.subtract %3#4, %arg5 : tensor<16x8xf32>
    %5 = stablehlo.multiply %cst, %cst_3 : tensor<f32>
    %6 = stablehlo.divide %5, %cst_0 : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<16xf32>) -> tensor<16x8xf32>
    %9 = stablehlo.multiply %4, %8 : tensor<16x8xf32>
    %10 = stablehlo.multiply %8, %4 : tensor<16x8xf32>
    %11 = stablehlo.add %9, %10 : tensor<16x8xf32>
    %12 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x8x24xf32>
    %13 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x24x8xf32>
    %14:9 = stablehlo.while(%iterArg = %arg0, %iterArg_5 = %3#5, %iterArg_6 = %3#6, %iterArg_7 = %3#7, %iterArg_8 = %arg1, %iterArg_9 = %c_2, %iterArg_10 = %11, %iterArg_11 = %12, %iterArg_12 = %13) : tensor<2x8x24xf32>, tensor<2x16x8xf32>, tensor<2x16x24xf32>, tensor<2x16x24xf32>, tensor<2x24x8xf32>, tensor<i32>, tensor<16x8xf32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>
    cond {
      %17 = stablehlo.compare LT, %iterArg_9, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %17 : tensor<i1>
    } do {
      %17 = stablehlo.subtract %c_1, %iterArg_9 : tensor<i32>
      %18 = stablehlo.subtract %17, %c : tensor<i32>
      %19 = func.call @dynamic_index_in_dim_0(%iterArg, %18) : (tensor<2x8x24xf32>, tensor<i32>) -> tensor<8x24xf32>
      %20 = func.call @dynamic_index_in_dim_4(%iterArg_5, %18) : (tensor<2x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
      %21 = func.call @dynamic_index_in_dim_5(%iterArg_6, %18) : (tensor<2x16x24xf32>, tensor<i32>) -> tensor<16x24xf32>
      %22 = func.call @dynamic_index_in_dim_5(%iterArg_7, %18) : (tensor<2x16x24xf32>, tensor<i32>) -> tensor<16x24xf32>
      %23 = func.call @dynamic_index_in_dim_1(%iterArg_8, %18) : (tensor<2x24x8xf32>, tensor<i32>) -> tensor<24x8xf32>
      %24:3 = func.call @closed_call_6(%iterArg_10, %19, %20, %21, %22, %23) : (tensor<16x8xf32>, tensor<8x24xf32>, tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x24xf32>, tensor<24x8xf32>) -> (tensor<16x8xf32>, tensor<8x24xf32>, tensor<24x8xf32>)
      %25 = func.call @dynamic_update_index_in_dim_7(%iterArg_11, %24#1, %18) : (tensor<2x8x24xf32>, tensor<8x24xf32>, tensor<i32>) -> tensor<2x8x24xf32>
      %26 = func.call @dynamic_update_index_in_dim_8(%iterArg_12, %24#2, %18) : (tensor<2x24x8xf32>, tensor<24x8xf32>, tensor<i32>) -> tensor<2x24x8xf32>
      %27 = stablehlo.add %iterArg_9, %c : tensor<i32>
      stablehlo.return %iterArg, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %27, %24#0, %25, %26 : tensor<2x8x24xf32>, tensor<2x16x8xf32>, tensor<2x16x24xf32>, tensor<2x16x24xf32>, tensor<2x24x8xf32>, tensor<i32>, tensor<16x8xf32>, tensor<2x8x24xf32>, tensor<2x24x8xf32>
    }
    %15 = stablehlo.add %arg2, %14#7 : tensor<2x8x24xf32>
    %16 = stablehlo.add %arg3, %14#8 : tensor<2x24x8xf32>
    return %15, %16 : tensor<2x8x24xf32>, tensor<2x24x8xf32>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<2x8x24xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<8x24xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 8, 24] : (tensor<2x8x24xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x24xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x8x24xf32>) -> tensor<8x24xf32>
    return %1 : tensor<8x24xf32>
  }
  func.func private @dynamic_index_in_dim_1(%arg0: tensor<2x24x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<24x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 24, 8] : (tensor<2x24x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x24x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x24x8xf32>) -> tensor<24x8xf32>
    return %1 : tensor<24x8xf32>
  }
  func.func private @closed_call_2(%arg0: tensor<f32> loc(unknown), %arg1: tensor<16x8xf32> loc(unknown), %arg2: tensor<8x24xf32> loc(unknown), %arg3: tensor<24x8xf32> loc(unknown)) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x24xf32>) {
    %0 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x24xf32>) -> tensor<16x24xf32>
    %1 = stablehlo.tanh %0 : tensor<16x24xf32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<16x24xf32>
    %3 = stablehlo.subtract %2, %1 : tensor<16x24xf32>
    %4 = stablehlo.dot_general %1, %arg3, contracting_dims = [1] x [0] : (tensor<16x24xf32>, tensor<24x8xf32>) -> tensor<16x8xf32>
    %5 = stablehlo.add %arg1, %4 : tensor<16x8xf32>
    return %5, %arg1, %1, %3 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x24xf32>, tensor<16x24xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<16x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x16x8xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x16x8xf32>
    return %1 : tensor<2x16x8xf32>
  }
  func.func private @dynamic_update_index_in_dim_3(%arg0: tensor<2x16x24xf32> loc(unknown), %arg1: tensor<16x24xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x16x24xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<16x24xf32>) -> tensor<1x16x24xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x16x24xf32>, tensor<1x16x24xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x16x24xf32>
    return %1 : tensor<2x16x24xf32>
  }
  func.func private @dynamic_index_in_dim_4(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 16, 8] : (tensor<2x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @dynamic_index_in_dim_5(%arg0: tensor<2x16x24xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<16x24xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 16, 24] : (tensor<2x16x24xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x24xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x24xf32>) -> tensor<16x24xf32>
    return %1 : tensor<16x24xf32>
  }
  func.func private @closed_call_6(%arg0: tensor<16x8xf32> loc(unknown), %arg1: tensor<8x24xf32> loc(unknown), %arg2: tensor<16x8xf32> loc(unknown), %arg3: tensor<16x24xf32> loc(unknown), %arg4: tensor<16x24xf32> loc(unknown), %arg5: tensor<24x8xf32> loc(unknown)) -> (tensor<16x8xf32>, tensor<8x24xf32>, tensor<24x8xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg3, contracting_dims = [0] x [0] : (tensor<16x8xf32>, tensor<16x24xf32>) -> tensor<8x24xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x24xf32>) -> tensor<24x8xf32>
    %2 = stablehlo.dot_general %arg0, %arg5, contracting_dims = [1] x [1] : (tensor<16x8xf32>, tensor<24x8xf32>) -> tensor<16x24xf32>
    %3 = stablehlo.multiply %2, %arg4 : tensor<16x24xf32>
    %4 = stablehlo.multiply %3, %arg3 : tensor<16x24xf32>
    %5 = stablehlo.add %3, %4 : tensor<16x24xf32>
    %6 = stablehlo.dot_general %5, %arg2, contracting_dims = [0] x [0] : (tensor<16x24xf32>, tensor<16x8xf32>) -> tensor<24x8xf32>
    %7 = stablehlo.transpose %6, dims = [1, 0] : (tensor<24x8xf32>) -> tensor<8x24xf32>
    %8 = stablehlo.dot_general %5, %arg1, contracting_dims = [1] x [1] : (tensor<16x24xf32>, tensor<8x24xf32>) -> tensor<16x8xf32>
    %9 = stablehlo.add %arg0, %8 : tensor<16x8xf32>
    return %9, %7, %1 : tensor<16x8xf32>, tensor<8x24xf32>, tensor<24x8xf32>
  }
  func.func private @dynamic_update_index_in_dim_7(%arg0: tensor<2x8x24xf32> loc(unknown), %arg1: tensor<8x24xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x8x24xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x24xf32>) -> tensor<1x8x24xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x8x24xf32>, tensor<1x8x24xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x8x24xf32>
    return %1 : tensor<2x8x24xf32>
  }
  func.func private @dynamic_update_index_in_dim_8(%arg0: tensor<2x24x8xf32> loc(unknown), %arg1: tensor<24x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x24x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<24x8xf32>) -> tensor<1x24x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x24x8xf32>, tensor<1x24x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x24x8xf32>
    return %1 : tensor<2x24x8xf32>
  }
}
