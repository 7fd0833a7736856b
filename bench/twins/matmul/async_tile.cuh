// interface::matmul::ASYNC_*, the tile of steps 5b and 5c, under the names the Rust kernels use.
#pragma once
#include "common.cuh"

constexpr int ASYNC_BM = MATMUL_ASYNC_BM, ASYNC_BN = MATMUL_ASYNC_BN, ASYNC_BK = MATMUL_ASYNC_BK;
constexpr int ASYNC_TM = MATMUL_ASYNC_TM, ASYNC_TN = MATMUL_ASYNC_TN, ASYNC_STAGES = MATMUL_ASYNC_STAGES;
constexpr int ASYNC_THREADS = MATMUL_ASYNC_THREADS, ASYNC_A_STRIDE = MATMUL_ASYNC_A_STRIDE;
constexpr int ASYNC_STAGE_FLOATS = MATMUL_ASYNC_STAGE_FLOATS;
