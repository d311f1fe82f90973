#loc17 = loc(unknown)
#loc42 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["stage"=4]> {stablehlo.mesh = {axes = [{name = "stage", size = 4 : i64}]}}
  sdy.mesh @mesh_0 = <["stage"=4]> {stablehlo.mesh = {axes = [{name = "stage", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"stage"}, {}, {}]>} loc("p['w_in']"), %arg1: tensor<4x16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"stage"}, {}, {}]>} loc("p['w_out']"), %arg2: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>} loc("a")) -> (tensor<6x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"stage"}, {}, {}]>, <@mesh, [{"stage"}, {}, {}]>, <@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"stage"} (%arg3: tensor<1x8x16xf32> loc("shard_map:"(#loc17)), %arg4: tensor<1x16x8xf32> loc("shard_map:"(#loc17)), %arg5: tensor<6x8xf32> loc("shard_map:"(#loc17))) {
      %c = stablehlo.constant dense<false> : tensor<i1>
      %c_0 = stablehlo.constant dense<3> : tensor<i32>
      %c_1 = stablehlo.constant dense<2> : tensor<i32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %c_3 = stablehlo.constant dense<6> : tensor<i32>
      %c_4 = stablehlo.constant dense<0> : tensor<i32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %c_5 = stablehlo.constant dense<1> : tensor<ui32>
      %c_6 = stablehlo.constant dense<4> : tensor<ui32>
      %2 = stablehlo.partition_id : tensor<ui32>
      %3 = stablehlo.divide %2, %c_5 : tensor<ui32>
      %4 = stablehlo.remainder %3, %c_6 : tensor<ui32>
      %5 = stablehlo.convert %4 : (tensor<ui32>) -> tensor<i32>
      %6 = stablehlo.reshape %arg5 : (tensor<6x8xf32>) -> tensor<3x2x8xf32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
      %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x2x8xf32>
      %9:8 = stablehlo.while(%iterArg = %6, %iterArg_7 = %5, %iterArg_8 = %arg3, %iterArg_9 = %arg4, %iterArg_10 = %c_4, %iterArg_11 = %c_4, %iterArg_12 = %7, %iterArg_13 = %8) : tensor<3x2x8xf32>, tensor<i32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8xf32>, tensor<3x2x8xf32>
      cond {
        %12 = stablehlo.compare LT, %iterArg_10, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %12 : tensor<i1>
      } do {
        %12 = stablehlo.add %iterArg_11, %c_2 : tensor<i32>
        %13 = stablehlo.minimum %iterArg_11, %c_1 : tensor<i32>
        %14 = func.call @dynamic_index_in_dim(%iterArg, %13) : (tensor<3x2x8xf32>, tensor<i32>) -> tensor<2x8xf32>
        %15 = stablehlo.convert %c_4 : tensor<i32>
        %16 = stablehlo.compare EQ, %iterArg_7, %15, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %17 = func.call @_where(%16, %14, %iterArg_12) : (tensor<i1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
        %18 = stablehlo.reshape %iterArg_8 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
        %19 = stablehlo.reshape %iterArg_9 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
        %20 = stablehlo.dot_general %17, %18, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
        %21 = stablehlo.tanh %20 : tensor<2x16xf32>
        %22 = stablehlo.dot_general %21, %19, contracting_dims = [1] x [0] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
        %23 = stablehlo.add %17, %22 : tensor<2x8xf32>
        %24 = stablehlo.subtract %iterArg_11, %c_0 : tensor<i32>
        %25 = stablehlo.maximum %24, %c_4 : tensor<i32>
        %26 = func.call @dynamic_update_index_in_dim(%iterArg_13, %23, %25) : (tensor<3x2x8xf32>, tensor<2x8xf32>, tensor<i32>) -> tensor<3x2x8xf32>
        %27 = stablehlo.convert %c_0 : tensor<i32>
        %28 = stablehlo.compare EQ, %iterArg_7, %27, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %29 = stablehlo.compare GE, %24, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        %30 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<i1>
        %31 = stablehlo.compare NE, %29, %30, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
        %32 = stablehlo.convert %31 : tensor<i1>
        %33 = stablehlo.and %28, %32 : tensor<i1>
        %34 = func.call @_where_0(%33, %26, %iterArg_13) : (tensor<i1>, tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> tensor<3x2x8xf32>
        %35 = "stablehlo.collective_permute"(%23) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3]]> : tensor<3x2xi64>}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
        %36 = stablehlo.add %iterArg_10, %c_2 : tensor<i32>
        stablehlo.return %iterArg, %iterArg_7, %iterArg_8, %iterArg_9, %36, %12, %35, %34 : tensor<3x2x8xf32>, tensor<i32>, tensor<1x8x16xf32>, tensor<1x16x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8xf32>, tensor<3x2x8xf32>
      }
      %10 = "stablehlo.all_reduce"(%9#7) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "stage">]>, use_global_device_ids}> ({
      ^bb0(%arg6: tensor<f32> loc("psum_invariant:"(#loc42)), %arg7: tensor<f32> loc("psum_invariant:"(#loc42))):
        %12 = stablehlo.add %arg6, %arg7 : tensor<f32>
        stablehlo.return %12 : tensor<f32>
      }) : (tensor<3x2x8xf32>) -> tensor<3x2x8xf32>
      %11 = stablehlo.reshape %10 : (tensor<3x2x8xf32>) -> tensor<6x8xf32>
      sdy.return %11 : tensor<6x8xf32>
    } : (tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{}, {}]> : tensor<6x8xf32>
    return %1 : tensor<6x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<3x2x8xf32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<2x8xf32> {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %2 = stablehlo.add %1, %c : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_0, %c_0, sizes = [1, 2, 8] : (tensor<3x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x8xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x2x8xf32>) -> tensor<2x8xf32>
    return %5 : tensor<2x8xf32>
  }
  func.func private @_where(%arg0: tensor<i1> loc(unknown), %arg1: tensor<2x8xf32> loc(unknown), %arg2: tensor<2x8xf32> loc(unknown)) -> tensor<2x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<3x2x8xf32> loc(unknown), %arg1: tensor<2x8xf32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<3x2x8xf32> {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x8xf32>) -> tensor<1x2x8xf32>
    %1 = stablehlo.compare LT, %arg2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.convert %arg2 : tensor<i32>
    %3 = stablehlo.add %2, %c : tensor<i32>
    %4 = stablehlo.select %1, %3, %arg2 : tensor<i1>, tensor<i32>
    %5 = stablehlo.dynamic_update_slice %arg0, %0, %4, %c_0, %c_0 : (tensor<3x2x8xf32>, tensor<1x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<3x2x8xf32>
    return %5 : tensor<3x2x8xf32>
  }
  func.func private @_where_0(%arg0: tensor<i1> loc(unknown), %arg1: tensor<3x2x8xf32> loc(unknown), %arg2: tensor<3x2x8xf32> loc(unknown)) -> tensor<3x2x8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<3x2x8xf32>
    return %0 : tensor<3x2x8xf32>
  }
}
