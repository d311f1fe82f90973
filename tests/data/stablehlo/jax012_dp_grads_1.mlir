#loc22 = loc(unknown)
#loc31 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  sdy.mesh @mesh_0 = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<2x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>} loc("p['w_in']"), %arg1: tensor<2x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>} loc("p['w_out']"), %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("a"), %arg3: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>} loc("b")) -> (tensor<2x8x16xf32> {jax.result_info = "result['w_in']", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}, tensor<2x16x8xf32> {jax.result_info = "result['w_out']", sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1, %arg2, %arg3) in_shardings=[<@mesh, [{}, {}, {}]>, <@mesh, [{}, {}, {}]>, <@mesh, [{"data"}, {}]>, <@mesh, [{"data"}, {}]>] out_shardings=[<@mesh, [{}, {}, {}]>, <@mesh, [{}, {}, {}]>] manual_axes={"data"} (%arg4: tensor<2x8x16xf32> loc("shard_map:"(#loc22)), %arg5: tensor<2x16x8xf32> loc("shard_map:"(#loc22)), %arg6: tensor<2x8xf32> loc("shard_map:"(#loc22)), %arg7: tensor<2x8xf32> loc("shard_map:"(#loc22))) {
      %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
      %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %c = stablehlo.constant dense<1> : tensor<i32>
      %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %c_3 = stablehlo.constant dense<2> : tensor<i32>
      %c_4 = stablehlo.constant dense<0> : tensor<i32>
      %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x8x16xf32>
      %4 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x2x8xf32>
      %5 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x2x16xf32>
      %6 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x16x8xf32>
      %7 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x2x16xf32>
      %8:9 = stablehlo.while(%iterArg = %arg4, %iterArg_6 = %arg5, %iterArg_7 = %c_4, %iterArg_8 = %arg6, %iterArg_9 = %3, %iterArg_10 = %4, %iterArg_11 = %5, %iterArg_12 = %6, %iterArg_13 = %7) : tensor<2x8x16xf32>, tensor<2x16x8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x16xf32>, tensor<2x16x8xf32>, tensor<2x2x16xf32>
      cond {
        %25 = stablehlo.compare LT, %iterArg_7, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %25 : tensor<i1>
      } do {
        %25 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_7) : (tensor<2x8x16xf32>, tensor<i32>) -> tensor<8x16xf32>
        %26 = func.call @dynamic_index_in_dim_0(%iterArg_6, %iterArg_7) : (tensor<2x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
        %27 = stablehlo.dot_general %iterArg_8, %25, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
        %28 = stablehlo.tanh %27 : tensor<2x16xf32>
        %29 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
        %30 = stablehlo.add %29, %28 : tensor<2x16xf32>
        %31 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x16xf32>
        %32 = stablehlo.subtract %31, %28 : tensor<2x16xf32>
        %33 = stablehlo.multiply %30, %32 : tensor<2x16xf32>
        %34 = stablehlo.dot_general %28, %26, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
        %35 = stablehlo.add %iterArg_8, %34 : tensor<2x8xf32>
        %36 = func.call @dynamic_update_index_in_dim(%iterArg_9, %25, %iterArg_7) : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<i32>) -> tensor<2x8x16xf32>
        %37 = func.call @dynamic_update_index_in_dim_1(%iterArg_10, %iterArg_8, %iterArg_7) : (tensor<2x2x8xf32>, tensor<2x8xf32>, tensor<i32>) -> tensor<2x2x8xf32>
        %38 = func.call @dynamic_update_index_in_dim_2(%iterArg_11, %33, %iterArg_7) : (tensor<2x2x16xf32>, tensor<2x16xf32>, tensor<i32>) -> tensor<2x2x16xf32>
        %39 = func.call @dynamic_update_index_in_dim_3(%iterArg_12, %26, %iterArg_7) : (tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<2x16x8xf32>
        %40 = func.call @dynamic_update_index_in_dim_2(%iterArg_13, %28, %iterArg_7) : (tensor<2x2x16xf32>, tensor<2x16xf32>, tensor<i32>) -> tensor<2x2x16xf32>
        %41 = stablehlo.add %iterArg_7, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_6, %41, %35, %36, %37, %38, %39, %40 : tensor<2x8x16xf32>, tensor<2x16x8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x16xf32>, tensor<2x16x8xf32>, tensor<2x2x16xf32>
      }
      %9 = stablehlo.subtract %8#3, %arg7 : tensor<2x8xf32>
      %10 = stablehlo.convert %cst_0 : tensor<f32>
      %11 = stablehlo.multiply %10, %cst_2 : tensor<f32>
      %12 = stablehlo.divide %11, %cst_1 : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %12, dims = [] : (tensor<f32>) -> tensor<2xf32>
      %14 = stablehlo.broadcast_in_dim %13, dims = [0] : (tensor<2xf32>) -> tensor<2x8xf32>
      %15 = stablehlo.multiply %9, %14 : tensor<2x8xf32>
      %16 = stablehlo.multiply %14, %9 : tensor<2x8xf32>
      %17 = stablehlo.add %16, %15 : tensor<2x8xf32>
      %18 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x8x16xf32>
      %19 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x16x8xf32>
      %20:9 = stablehlo.while(%iterArg = %8#4, %iterArg_6 = %8#5, %iterArg_7 = %8#6, %iterArg_8 = %8#7, %iterArg_9 = %8#8, %iterArg_10 = %c_4, %iterArg_11 = %17, %iterArg_12 = %18, %iterArg_13 = %19) : tensor<2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x16xf32>, tensor<2x16x8xf32>, tensor<2x2x16xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32>
      cond {
        %25 = stablehlo.compare LT, %iterArg_10, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %25 : tensor<i1>
      } do {
        %25 = stablehlo.subtract %c_3, %iterArg_10 : tensor<i32>
        %26 = stablehlo.subtract %25, %c : tensor<i32>
        %27 = func.call @dynamic_index_in_dim_4(%iterArg, %26) : (tensor<2x8x16xf32>, tensor<i32>) -> tensor<8x16xf32>
        %28 = func.call @dynamic_index_in_dim_5(%iterArg_6, %26) : (tensor<2x2x8xf32>, tensor<i32>) -> tensor<2x8xf32>
        %29 = func.call @dynamic_index_in_dim_6(%iterArg_7, %26) : (tensor<2x2x16xf32>, tensor<i32>) -> tensor<2x16xf32>
        %30 = func.call @dynamic_index_in_dim_7(%iterArg_8, %26) : (tensor<2x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
        %31 = func.call @dynamic_index_in_dim_6(%iterArg_9, %26) : (tensor<2x2x16xf32>, tensor<i32>) -> tensor<2x16xf32>
        %32 = stablehlo.dot_general %iterArg_11, %31, contracting_dims = [0] x [0] : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<8x16xf32>
        %33 = stablehlo.transpose %32, dims = [1, 0] : (tensor<8x16xf32>) -> tensor<16x8xf32>
        %34 = stablehlo.dot_general %iterArg_11, %30, contracting_dims = [1] x [1] : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32>
        %35 = "stablehlo.all_reduce"(%33) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "data">]>, use_global_device_ids}> ({
        ^bb0(%arg8: tensor<f32> loc("psum_invariant:"(#loc31)), %arg9: tensor<f32> loc("psum_invariant:"(#loc31))):
          %45 = stablehlo.add %arg8, %arg9 : tensor<f32>
          stablehlo.return %45 : tensor<f32>
        }) : (tensor<16x8xf32>) -> tensor<16x8xf32>
        %36 = stablehlo.multiply %34, %29 : tensor<2x16xf32>
        %37 = stablehlo.dot_general %36, %28, contracting_dims = [0] x [0] : (tensor<2x16xf32>, tensor<2x8xf32>) -> tensor<16x8xf32>
        %38 = stablehlo.transpose %37, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
        %39 = stablehlo.dot_general %36, %27, contracting_dims = [1] x [1] : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
        %40 = stablehlo.add %iterArg_11, %39 : tensor<2x8xf32>
        %41 = "stablehlo.all_reduce"(%38) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "data">]>, use_global_device_ids}> ({
        ^bb0(%arg8: tensor<f32> loc("psum_invariant:"(#loc31)), %arg9: tensor<f32> loc("psum_invariant:"(#loc31))):
          %45 = stablehlo.add %arg8, %arg9 : tensor<f32>
          stablehlo.return %45 : tensor<f32>
        }) : (tensor<8x16xf32>) -> tensor<8x16xf32>
        %42 = func.call @dynamic_update_index_in_dim_8(%iterArg_12, %41, %26) : (tensor<2x8x16xf32>, tensor<8x16xf32>, tensor<i32>) -> tensor<2x8x16xf32>
        %43 = func.call @dynamic_update_index_in_dim_9(%iterArg_13, %35, %26) : (tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<i32>) -> tensor<2x16x8xf32>
        %44 = stablehlo.add %iterArg_10, %c : tensor<i32>
        stablehlo.return %iterArg, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %44, %40, %42, %43 : tensor<2x8x16xf32>, tensor<2x2x8xf32>, tensor<2x2x16xf32>, tensor<2x16x8xf32>, tensor<2x2x16xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32>
      }
      %21 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x16xf32>
      %22 = stablehlo.divide %20#7, %21 : tensor<2x8x16xf32>
      %23 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x16x8xf32>
      %24 = stablehlo.divide %20#8, %23 : tensor<2x16x8xf32>
      sdy.return %22, %24 : tensor<2x8x16xf32>, tensor<2x16x8xf32>
    } : (tensor<2x8x16xf32>, tensor<2x16x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<2x8x16xf32>, tensor<2x16x8xf32>)
    %1 = sdy.sharding_constraint %0#0 <@mesh, [{}, {}, {}]> : tensor<2x8x16xf32>
    %2 = sdy.sharding_constraint %0#1 <@mesh, [{}, {}, {}]> : tensor<2x16x8xf32>
    return %1, %2 : tensor<2x8x16xf32>, tensor<2x16x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<2x8x16xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<8x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 8, 16] : (tensor<2x8x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x16xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    return %1 : tensor<8x16xf32>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 16, 8] : (tensor<2x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<2x8x16xf32> loc(unknown), %arg1: tensor<8x16xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x8x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x8x16xf32>, tensor<1x8x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x8x16xf32>
    return %1 : tensor<2x8x16xf32>
  }
  func.func private @dynamic_update_index_in_dim_1(%arg0: tensor<2x2x8xf32> loc(unknown), %arg1: tensor<2x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x2x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x8xf32>) -> tensor<1x2x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x2x8xf32>, tensor<1x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x2x8xf32>
    return %1 : tensor<2x2x8xf32>
  }
  func.func private @dynamic_update_index_in_dim_2(%arg0: tensor<2x2x16xf32> loc(unknown), %arg1: tensor<2x16xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x2x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x16xf32>) -> tensor<1x2x16xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x2x16xf32>, tensor<1x2x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x2x16xf32>
    return %1 : tensor<2x2x16xf32>
  }
  func.func private @dynamic_update_index_in_dim_3(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<16x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x16x8xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x16x8xf32>
    return %1 : tensor<2x16x8xf32>
  }
  func.func private @dynamic_index_in_dim_4(%arg0: tensor<2x8x16xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<8x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 8, 16] : (tensor<2x8x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x16xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    return %1 : tensor<8x16xf32>
  }
  func.func private @dynamic_index_in_dim_5(%arg0: tensor<2x2x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<2x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 2, 8] : (tensor<2x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x8xf32>) -> tensor<2x8xf32>
    return %1 : tensor<2x8xf32>
  }
  func.func private @dynamic_index_in_dim_6(%arg0: tensor<2x2x16xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<2x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 2, 16] : (tensor<2x2x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x16xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x16xf32>) -> tensor<2x16xf32>
    return %1 : tensor<2x16xf32>
  }
  func.func private @dynamic_index_in_dim_7(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c, sizes = [1, 16, 8] : (tensor<2x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @dynamic_update_index_in_dim_8(%arg0: tensor<2x8x16xf32> loc(unknown), %arg1: tensor<8x16xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x8x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x8x16xf32>, tensor<1x8x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x8x16xf32>
    return %1 : tensor<2x8x16xf32>
  }
  func.func private @dynamic_update_index_in_dim_9(%arg0: tensor<2x16x8xf32> loc(unknown), %arg1: tensor<16x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<2x16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<16x8xf32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c : (tensor<2x16x8xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x16x8xf32>
    return %1 : tensor<2x16x8xf32>
  }
}
