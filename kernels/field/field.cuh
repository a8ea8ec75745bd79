// All field types: fr_t, fq_t, fq2_t (see kernels/README.md for the API).
#pragma once
#include "fq.cuh"
#include "fq2.cuh"
#include "fr.cuh"
