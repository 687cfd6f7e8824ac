// -Z (compression): what a lossy AllReduce did to the data. Inputs are gradient-like (normally
// distributed, different per rank and element); the reference is the exact sum of the inputs
// as stored, computed by an fp64 AllReduce (never compressed); the metrics compare one rank's
// result with it (every rank holds the same bits).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccl.h"

namespace braid::perf {

// Normal(0, 1) element i of rank `rank`, deterministic.
double gradientInput(int rank, size_t i);

struct Accuracy {
  bool valid = false;  // a float type with sum or avg
  double relL2 = 0;    // ||result - exact|| / ||exact||
  double maxAbs = 0;   // max |result - exact|
  double cosine = 0;   // result . exact / (|result| |exact|)
  double bias = 0;     // mean (result - exact)
};

// Folds result (of `type`) against exact (fp64) into the metrics.
Accuracy compare(const void* result, ncclDataType_t type, const double* exact, size_t count);

// "int8", "topk:0.01", "none", "auto": the values BRAID_COMPRESS takes.
bool validCompressLabel(const std::string& label);

struct AccuracyRow {
  size_t bytes, count;
  const char* type;
  const char* redop;
  double busbw;  // out-of-place: logical bytes over time
  Accuracy acc;
};
void printAccuracyTable(const std::string& label, const std::vector<AccuracyRow>& rows);

}  // namespace braid::perf
