// One translation unit, so that every twin lands in one module for the runner.
#include "vector_add.cu"
#include "saxpy.cu"
#include "counter.cu"
#include "histogram.cu"
#include "matmul.cu"
#include "conv.cu"
#include "transpose.cu"
