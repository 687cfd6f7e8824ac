/* The same 8-byte ping-pong as shm_pingpong, over MPI, for comparison with Open MPI's shared
 * memory (vader) path. Not built by CMake; build and run it by hand:
 *   mpicc -O2 -o mpi_pingpong bench/micro/mpi_pingpong.c
 *   mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,vader ./mpi_pingpong
 * Reports the best and the median of 20 batches, like shm_pingpong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  enum { kBatches = 21, kIters = 10000 };
  double perBatch[kBatches];
  char buf[8] = {0};
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int batch = 0; batch < kBatches; ++batch) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < kIters; ++i) {
      if (rank == 0) {
        MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    }
    perBatch[batch] = (MPI_Wtime() - start) / kIters / 2 * 1e6;
  }
  /* batch 0 warms up */
  qsort(perBatch + 1, kBatches - 1, sizeof(double), compare);
  if (rank == 0)
    printf(
        "MPI 8-byte one-way latency: best %.3f us, median %.3f us (%d batches of %d round trips)\n",
        perBatch[1], perBatch[1 + (kBatches - 1) / 2], kBatches - 1, kIters);
  MPI_Finalize();
  return 0;
}
