#loc16 = loc(unknown)
module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 3 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["seq"=3]> {stablehlo.mesh = {axes = [{name = "seq", size = 3 : i64}]}}
  func.func public @main(%arg0: tensor<6x1x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"seq"}, {}, {}]>} loc("a"), %arg1: tensor<6x1x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"seq"}, {}, {}]>} loc("b"), %arg2: tensor<6x1x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"seq"}, {}, {}]>} loc("c")) -> (tensor<6x1x16xbf16> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"seq"}, {}, {}]>}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"seq"}, {}, {}]>, <@mesh, [{"seq"}, {}, {}]>, <@mesh, [{"seq"}, {}, {}]>] out_shardings=[<@mesh, [{"seq"}, {}, {}]>] manual_axes={"seq"} (%arg3: tensor<2x1x16xbf16> loc("shard_map:"(#loc16)), %arg4: tensor<2x1x16xbf16> loc("shard_map:"(#loc16)), %arg5: tensor<2x1x16xbf16> loc("shard_map:"(#loc16))) {
      %c = stablehlo.constant dense<2> : tensor<i32>
      %c_0 = stablehlo.constant dense<0> : tensor<i32>
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %cst_3 = stablehlo.constant dense<2.500000e-01> : tensor<f32>
      %c_4 = stablehlo.constant dense<5> : tensor<i32>
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %c_6 = stablehlo.constant dense<1> : tensor<ui32>
      %c_7 = stablehlo.constant dense<3> : tensor<ui32>
      %1 = stablehlo.partition_id : tensor<ui32>
      %2 = stablehlo.divide %1, %c_6 : tensor<ui32>
      %3 = stablehlo.remainder %2, %c_7 : tensor<ui32>
      %4 = stablehlo.convert %3 : (tensor<ui32>) -> tensor<i32>
      %5 = stablehlo.multiply %4, %c_5 : tensor<i32>
      %6 = stablehlo.iota dim = 0 : tensor<1xi32>
      %7 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<i32>) -> tensor<1xi32>
      %8 = stablehlo.add %7, %6 : tensor<1xi32>
      %9 = stablehlo.subtract %c_4, %4 : tensor<i32>
      %10 = stablehlo.multiply %9, %c_5 : tensor<i32>
      %11 = stablehlo.iota dim = 0 : tensor<1xi32>
      %12 = stablehlo.broadcast_in_dim %10, dims = [] : (tensor<i32>) -> tensor<1xi32>
      %13 = stablehlo.add %12, %11 : tensor<1xi32>
      %14 = stablehlo.concatenate %8, %13, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
      %15 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
      %16 = stablehlo.broadcast_in_dim %14, dims = [1] : (tensor<2xi32>) -> tensor<1x2xi32>
      %17 = stablehlo.broadcast_in_dim %15, dims = [0, 1] : (tensor<2x1xi32>) -> tensor<2x2xi32>
      %18 = stablehlo.broadcast_in_dim %16, dims = [0, 1] : (tensor<1x2xi32>) -> tensor<2x2xi32>
      %19 = stablehlo.compare GE, %17, %18, SIGNED : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi1>
      %20 = stablehlo.dot_general %arg3, %arg4, batching_dims = [1] x [1], contracting_dims = [2] x [2] : (tensor<2x1x16xbf16>, tensor<2x1x16xbf16>) -> tensor<1x2x2xf32>
      %21 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x2x2xf32>
      %22 = stablehlo.multiply %20, %21 : tensor<1x2x2xf32>
      %23 = stablehlo.broadcast_in_dim %19, dims = [1, 2] : (tensor<2x2xi1>) -> tensor<1x2x2xi1>
      %24 = func.call @_where(%23, %22, %cst_2) : (tensor<1x2x2xi1>, tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
      %25 = stablehlo.reduce(%24 init: %cst_2) applies stablehlo.maximum across dimensions = [2] : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2xf32>
      %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<1x2x1xf32>
      %27 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x2x1xf32>
      %28 = stablehlo.compare EQ, %26, %27, FLOAT : (tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> tensor<1x2x1xi1>
      %29 = func.call @_where_0(%28, %cst_1, %26) : (tensor<1x2x1xi1>, tensor<f32>, tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
      %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1, 2] : (tensor<1x2x1xf32>) -> tensor<1x2x2xf32>
      %31 = stablehlo.subtract %24, %30 : tensor<1x2x2xf32>
      %32 = stablehlo.exponential %31 : tensor<1x2x2xf32>
      %33 = stablehlo.reduce(%32 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2xf32>
      %34 = stablehlo.convert %arg5 : (tensor<2x1x16xbf16>) -> tensor<2x1x16xf32>
      %35 = stablehlo.dot_general %34, %32, batching_dims = [1] x [0], contracting_dims = [0] x [2] : (tensor<2x1x16xf32>, tensor<1x2x2xf32>) -> tensor<1x16x2xf32>
      %36 = stablehlo.transpose %35, dims = [2, 0, 1] : (tensor<1x16x2xf32>) -> tensor<2x1x16xf32>
      %37 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
      %38 = stablehlo.compare EQ, %33, %37, FLOAT : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xi1>
      %39 = func.call @_where_1(%38, %cst, %33) : (tensor<1x2xi1>, tensor<f32>, tensor<1x2xf32>) -> tensor<1x2xf32>
      %40 = stablehlo.transpose %39, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
      %41 = stablehlo.broadcast_in_dim %40, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
      %42 = stablehlo.broadcast_in_dim %41, dims = [0, 1, 2] : (tensor<2x1x1xf32>) -> tensor<2x1x16xf32>
      %43 = stablehlo.divide %36, %42 : tensor<2x1x16xf32>
      %44 = stablehlo.reshape %29 : (tensor<1x2x1xf32>) -> tensor<1x2xf32>
      %45 = stablehlo.log %33 : tensor<1x2xf32>
      %46 = stablehlo.add %44, %45 : tensor<1x2xf32>
      %47 = stablehlo.transpose %46, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
      %48 = stablehlo.slice %43 [0:1, 0:1, 0:16] : (tensor<2x1x16xf32>) -> tensor<1x1x16xf32>
      %49 = stablehlo.slice %47 [0:1, 0:1] : (tensor<2x1xf32>) -> tensor<1x1xf32>
      %50 = stablehlo.slice %43 [1:2, 0:1, 0:16] : (tensor<2x1x16xf32>) -> tensor<1x1x16xf32>
      %51 = stablehlo.slice %47 [1:2, 0:1] : (tensor<2x1xf32>) -> tensor<1x1xf32>
      %52:10 = stablehlo.while(%iterArg = %4, %iterArg_8 = %arg3, %iterArg_9 = %c_0, %iterArg_10 = %c_5, %iterArg_11 = %48, %iterArg_12 = %49, %iterArg_13 = %50, %iterArg_14 = %51, %iterArg_15 = %arg4, %iterArg_16 = %arg5) : tensor<i32>, tensor<2x1x16xbf16>, tensor<i32>, tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>
      cond {
        %55 = stablehlo.compare LT, %iterArg_9, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %55 : tensor<i1>
      } do {
        %55:7 = func.call @closed_call(%iterArg, %iterArg_8, %iterArg_10, %iterArg_11, %iterArg_12, %iterArg_13, %iterArg_14, %iterArg_15, %iterArg_16) : (tensor<i32>, tensor<2x1x16xbf16>, tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>) -> (tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>)
        %56 = stablehlo.add %iterArg_9, %c_5 : tensor<i32>
        stablehlo.return %iterArg, %iterArg_8, %56, %55#0, %55#1, %55#2, %55#3, %55#4, %55#5, %55#6 : tensor<i32>, tensor<2x1x16xbf16>, tensor<i32>, tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>
      }
      %53 = stablehlo.concatenate %52#4, %52#6, dim = 0 : (tensor<1x1x16xf32>, tensor<1x1x16xf32>) -> tensor<2x1x16xf32>
      %54 = stablehlo.convert %53 : (tensor<2x1x16xf32>) -> tensor<2x1x16xbf16>
      sdy.return %54 : tensor<2x1x16xbf16>
    } : (tensor<6x1x16xbf16>, tensor<6x1x16xbf16>, tensor<6x1x16xbf16>) -> tensor<6x1x16xbf16>
    return %0 : tensor<6x1x16xbf16>
  }
  func.func private @_where(%arg0: tensor<1x2x2xi1> loc(unknown), %arg1: tensor<1x2x2xf32> loc(unknown), %arg2: tensor<f32> loc(unknown)) -> tensor<1x2x2xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x2x2xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<1x2x2xi1>, tensor<1x2x2xf32>
    return %2 : tensor<1x2x2xf32>
  }
  func.func private @_where_0(%arg0: tensor<1x2x1xi1> loc(unknown), %arg1: tensor<f32> loc(unknown), %arg2: tensor<1x2x1xf32> loc(unknown)) -> tensor<1x2x1xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x2x1xf32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<1x2x1xi1>, tensor<1x2x1xf32>
    return %2 : tensor<1x2x1xf32>
  }
  func.func private @_where_1(%arg0: tensor<1x2xi1> loc(unknown), %arg1: tensor<f32> loc(unknown), %arg2: tensor<1x2xf32> loc(unknown)) -> tensor<1x2xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<1x2xi1>, tensor<1x2xf32>
    return %2 : tensor<1x2xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32> loc(unknown), %arg1: tensor<2x1x16xbf16> loc(unknown), %arg2: tensor<i32> loc(unknown), %arg3: tensor<1x1x16xf32> loc(unknown), %arg4: tensor<1x1xf32> loc(unknown), %arg5: tensor<1x1x16xf32> loc(unknown), %arg6: tensor<1x1xf32> loc(unknown), %arg7: tensor<2x1x16xbf16> loc(unknown), %arg8: tensor<2x1x16xbf16> loc(unknown)) -> (tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %cst_2 = stablehlo.constant dense<2.500000e-01> : tensor<f32>
    %c = stablehlo.constant dense<3> : tensor<i32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg2, %c_3 : tensor<i32>
    %1 = "stablehlo.collective_permute"(%arg7) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>}> : (tensor<2x1x16xbf16>) -> tensor<2x1x16xbf16>
    %2 = "stablehlo.collective_permute"(%arg8) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>}> : (tensor<2x1x16xbf16>) -> tensor<2x1x16xbf16>
    %3 = stablehlo.convert %arg2 : tensor<i32>
    %4 = stablehlo.subtract %arg0, %3 : tensor<i32>
    %5 = call @remainder(%4, %c) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %6 = stablehlo.compare LT, %5, %arg0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.convert %6 : (tensor<i1>) -> tensor<i32>
    %8:4 = "stablehlo.case"(%7) ({
      %9 = stablehlo.slice %arg1 [1:2, 0:1, 0:16] : (tensor<2x1x16xbf16>) -> tensor<1x1x16xbf16>
      %10 = stablehlo.dot_general %9, %1, batching_dims = [1] x [1], contracting_dims = [2] x [2] : (tensor<1x1x16xbf16>, tensor<2x1x16xbf16>) -> tensor<1x1x2xf32>
      %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x1x2xf32>
      %12 = stablehlo.multiply %10, %11 : tensor<1x1x2xf32>
      %13 = stablehlo.reduce(%12 init: %cst_1) applies stablehlo.maximum across dimensions = [2] : (tensor<1x1x2xf32>, tensor<f32>) -> tensor<1x1xf32>
      %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %15 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x1x1xf32>
      %16 = stablehlo.compare EQ, %14, %15, FLOAT : (tensor<1x1x1xf32>, tensor<1x1x1xf32>) -> tensor<1x1x1xi1>
      %17 = func.call @_where_3(%16, %cst_0, %14) : (tensor<1x1x1xi1>, tensor<f32>, tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
      %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x2xf32>
      %19 = stablehlo.subtract %12, %18 : tensor<1x1x2xf32>
      %20 = stablehlo.exponential %19 : tensor<1x1x2xf32>
      %21 = stablehlo.reduce(%20 init: %cst_0) applies stablehlo.add across dimensions = [2] : (tensor<1x1x2xf32>, tensor<f32>) -> tensor<1x1xf32>
      %22 = stablehlo.convert %2 : (tensor<2x1x16xbf16>) -> tensor<2x1x16xf32>
      %23 = stablehlo.dot_general %22, %20, batching_dims = [1] x [0], contracting_dims = [0] x [2] : (tensor<2x1x16xf32>, tensor<1x1x2xf32>) -> tensor<1x16x1xf32>
      %24 = stablehlo.transpose %23, dims = [2, 0, 1] : (tensor<1x16x1xf32>) -> tensor<1x1x16xf32>
      %25 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
      %26 = stablehlo.compare EQ, %21, %25, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %27 = func.call @_where_4(%26, %cst, %21) : (tensor<1x1xi1>, tensor<f32>, tensor<1x1xf32>) -> tensor<1x1xf32>
      %28 = stablehlo.transpose %27, dims = [1, 0] : (tensor<1x1xf32>) -> tensor<1x1xf32>
      %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %31 = stablehlo.divide %24, %30 : tensor<1x1x16xf32>
      %32 = stablehlo.reshape %17 : (tensor<1x1x1xf32>) -> tensor<1x1xf32>
      %33 = stablehlo.log %21 : tensor<1x1xf32>
      %34 = stablehlo.add %32, %33 : tensor<1x1xf32>
      %35 = stablehlo.transpose %34, dims = [1, 0] : (tensor<1x1xf32>) -> tensor<1x1xf32>
      %36 = stablehlo.maximum %arg6, %35 : tensor<1x1xf32>
      %37 = stablehlo.subtract %arg6, %35 : tensor<1x1xf32>
      %38 = stablehlo.compare NE, %37, %37, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %39 = stablehlo.add %arg6, %35 : tensor<1x1xf32>
      %40 = stablehlo.abs %37 : tensor<1x1xf32>
      %41 = stablehlo.negate %40 : tensor<1x1xf32>
      %42 = stablehlo.exponential %41 : tensor<1x1xf32>
      %43 = stablehlo.log_plus_one %42 : tensor<1x1xf32>
      %44 = stablehlo.add %36, %43 : tensor<1x1xf32>
      %45 = stablehlo.select %38, %39, %44 : tensor<1x1xi1>, tensor<1x1xf32>
      %46 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
      %47 = stablehlo.compare EQ, %45, %46, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %48 = func.call @_where_4(%47, %cst_0, %45) : (tensor<1x1xi1>, tensor<f32>, tensor<1x1xf32>) -> tensor<1x1xf32>
      %49 = stablehlo.subtract %arg6, %48 : tensor<1x1xf32>
      %50 = stablehlo.exponential %49 : tensor<1x1xf32>
      %51 = stablehlo.broadcast_in_dim %50, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %52 = stablehlo.subtract %35, %48 : tensor<1x1xf32>
      %53 = stablehlo.exponential %52 : tensor<1x1xf32>
      %54 = stablehlo.broadcast_in_dim %53, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %55 = stablehlo.broadcast_in_dim %51, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %56 = stablehlo.multiply %55, %arg5 : tensor<1x1x16xf32>
      %57 = stablehlo.broadcast_in_dim %54, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %58 = stablehlo.multiply %57, %31 : tensor<1x1x16xf32>
      %59 = stablehlo.add %56, %58 : tensor<1x1x16xf32>
      stablehlo.return %arg3, %arg4, %59, %45 : tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>
    }, {
      %9 = stablehlo.slice %1 [0:1, 0:1, 0:16] : (tensor<2x1x16xbf16>) -> tensor<1x1x16xbf16>
      %10 = stablehlo.slice %2 [0:1, 0:1, 0:16] : (tensor<2x1x16xbf16>) -> tensor<1x1x16xbf16>
      %11 = stablehlo.dot_general %arg1, %9, batching_dims = [1] x [1], contracting_dims = [2] x [2] : (tensor<2x1x16xbf16>, tensor<1x1x16xbf16>) -> tensor<1x2x1xf32>
      %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x2x1xf32>
      %13 = stablehlo.multiply %11, %12 : tensor<1x2x1xf32>
      %14 = stablehlo.reduce(%13 init: %cst_1) applies stablehlo.maximum across dimensions = [2] : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2xf32>
      %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<1x2x1xf32>
      %16 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x2x1xf32>
      %17 = stablehlo.compare EQ, %15, %16, FLOAT : (tensor<1x2x1xf32>, tensor<1x2x1xf32>) -> tensor<1x2x1xi1>
      %18 = func.call @_where_0(%17, %cst_0, %15) : (tensor<1x2x1xi1>, tensor<f32>, tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
      %19 = stablehlo.subtract %13, %18 : tensor<1x2x1xf32>
      %20 = stablehlo.exponential %19 : tensor<1x2x1xf32>
      %21 = stablehlo.reduce(%20 init: %cst_0) applies stablehlo.add across dimensions = [2] : (tensor<1x2x1xf32>, tensor<f32>) -> tensor<1x2xf32>
      %22 = stablehlo.convert %10 : (tensor<1x1x16xbf16>) -> tensor<1x1x16xf32>
      %23 = stablehlo.dot_general %22, %20, batching_dims = [1] x [0], contracting_dims = [0] x [2] : (tensor<1x1x16xf32>, tensor<1x2x1xf32>) -> tensor<1x16x2xf32>
      %24 = stablehlo.transpose %23, dims = [2, 0, 1] : (tensor<1x16x2xf32>) -> tensor<2x1x16xf32>
      %25 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
      %26 = stablehlo.compare EQ, %21, %25, FLOAT : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xi1>
      %27 = func.call @_where_1(%26, %cst, %21) : (tensor<1x2xi1>, tensor<f32>, tensor<1x2xf32>) -> tensor<1x2xf32>
      %28 = stablehlo.transpose %27, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
      %29 = stablehlo.broadcast_in_dim %28, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x1x1xf32>
      %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1, 2] : (tensor<2x1x1xf32>) -> tensor<2x1x16xf32>
      %31 = stablehlo.divide %24, %30 : tensor<2x1x16xf32>
      %32 = stablehlo.reshape %18 : (tensor<1x2x1xf32>) -> tensor<1x2xf32>
      %33 = stablehlo.log %21 : tensor<1x2xf32>
      %34 = stablehlo.add %32, %33 : tensor<1x2xf32>
      %35 = stablehlo.transpose %34, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
      %36 = stablehlo.slice %31 [0:1, 0:1, 0:16] : (tensor<2x1x16xf32>) -> tensor<1x1x16xf32>
      %37 = stablehlo.slice %35 [0:1, 0:1] : (tensor<2x1xf32>) -> tensor<1x1xf32>
      %38 = stablehlo.maximum %arg4, %37 : tensor<1x1xf32>
      %39 = stablehlo.subtract %arg4, %37 : tensor<1x1xf32>
      %40 = stablehlo.compare NE, %39, %39, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %41 = stablehlo.add %arg4, %37 : tensor<1x1xf32>
      %42 = stablehlo.abs %39 : tensor<1x1xf32>
      %43 = stablehlo.negate %42 : tensor<1x1xf32>
      %44 = stablehlo.exponential %43 : tensor<1x1xf32>
      %45 = stablehlo.log_plus_one %44 : tensor<1x1xf32>
      %46 = stablehlo.add %38, %45 : tensor<1x1xf32>
      %47 = stablehlo.select %40, %41, %46 : tensor<1x1xi1>, tensor<1x1xf32>
      %48 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
      %49 = stablehlo.compare EQ, %47, %48, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %50 = func.call @_where_4(%49, %cst_0, %47) : (tensor<1x1xi1>, tensor<f32>, tensor<1x1xf32>) -> tensor<1x1xf32>
      %51 = stablehlo.subtract %arg4, %50 : tensor<1x1xf32>
      %52 = stablehlo.exponential %51 : tensor<1x1xf32>
      %53 = stablehlo.broadcast_in_dim %52, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %54 = stablehlo.subtract %37, %50 : tensor<1x1xf32>
      %55 = stablehlo.exponential %54 : tensor<1x1xf32>
      %56 = stablehlo.broadcast_in_dim %55, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %57 = stablehlo.broadcast_in_dim %53, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %58 = stablehlo.multiply %57, %arg3 : tensor<1x1x16xf32>
      %59 = stablehlo.broadcast_in_dim %56, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %60 = stablehlo.multiply %59, %36 : tensor<1x1x16xf32>
      %61 = stablehlo.add %58, %60 : tensor<1x1x16xf32>
      %62 = stablehlo.slice %31 [1:2, 0:1, 0:16] : (tensor<2x1x16xf32>) -> tensor<1x1x16xf32>
      %63 = stablehlo.slice %35 [1:2, 0:1] : (tensor<2x1xf32>) -> tensor<1x1xf32>
      %64 = stablehlo.maximum %arg6, %63 : tensor<1x1xf32>
      %65 = stablehlo.subtract %arg6, %63 : tensor<1x1xf32>
      %66 = stablehlo.compare NE, %65, %65, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %67 = stablehlo.add %arg6, %63 : tensor<1x1xf32>
      %68 = stablehlo.abs %65 : tensor<1x1xf32>
      %69 = stablehlo.negate %68 : tensor<1x1xf32>
      %70 = stablehlo.exponential %69 : tensor<1x1xf32>
      %71 = stablehlo.log_plus_one %70 : tensor<1x1xf32>
      %72 = stablehlo.add %64, %71 : tensor<1x1xf32>
      %73 = stablehlo.select %66, %67, %72 : tensor<1x1xi1>, tensor<1x1xf32>
      %74 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
      %75 = stablehlo.compare EQ, %73, %74, FLOAT : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xi1>
      %76 = func.call @_where_4(%75, %cst_0, %73) : (tensor<1x1xi1>, tensor<f32>, tensor<1x1xf32>) -> tensor<1x1xf32>
      %77 = stablehlo.subtract %arg6, %76 : tensor<1x1xf32>
      %78 = stablehlo.exponential %77 : tensor<1x1xf32>
      %79 = stablehlo.broadcast_in_dim %78, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %80 = stablehlo.subtract %63, %76 : tensor<1x1xf32>
      %81 = stablehlo.exponential %80 : tensor<1x1xf32>
      %82 = stablehlo.broadcast_in_dim %81, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x1x1xf32>
      %83 = stablehlo.broadcast_in_dim %79, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %84 = stablehlo.multiply %83, %arg5 : tensor<1x1x16xf32>
      %85 = stablehlo.broadcast_in_dim %82, dims = [0, 1, 2] : (tensor<1x1x1xf32>) -> tensor<1x1x16xf32>
      %86 = stablehlo.multiply %85, %62 : tensor<1x1x16xf32>
      %87 = stablehlo.add %84, %86 : tensor<1x1x16xf32>
      stablehlo.return %61, %47, %87, %73 : tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>
    }) : (tensor<i32>) -> (tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>)
    return %0, %8#0, %8#1, %8#2, %8#3, %1, %2 : tensor<i32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<1x1x16xf32>, tensor<1x1xf32>, tensor<2x1x16xbf16>, tensor<2x1x16xbf16>
  }
  func.func private @remainder(%arg0: tensor<i32> loc(unknown), %arg1: tensor<i32> loc(unknown)) -> tensor<i32> {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = call @_where_2(%1, %c, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
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
  func.func private @_where_2(%arg0: tensor<i1> loc(unknown), %arg1: tensor<i32> loc(unknown), %arg2: tensor<i32> loc(unknown)) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @_where_3(%arg0: tensor<1x1x1xi1> loc(unknown), %arg1: tensor<f32> loc(unknown), %arg2: tensor<1x1x1xf32> loc(unknown)) -> tensor<1x1x1xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x1x1xf32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<1x1x1xi1>, tensor<1x1x1xf32>
    return %2 : tensor<1x1x1xf32>
  }
  func.func private @_where_4(%arg0: tensor<1x1xi1> loc(unknown), %arg1: tensor<f32> loc(unknown), %arg2: tensor<1x1xf32> loc(unknown)) -> tensor<1x1xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<1x1xf32>
    %2 = stablehlo.select %arg0, %1, %arg2 : tensor<1x1xi1>, tensor<1x1xf32>
    return %2 : tensor<1x1xf32>
  }
}
