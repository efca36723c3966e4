/* saxpy: y[i] = a * x[i] + y[i] for i < n (offload selfcheck's program). */
kernel void saxpy(float a, const global float *x, global float *y, ulong n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
