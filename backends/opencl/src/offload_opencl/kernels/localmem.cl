/* localmem: stages work-item ids through dynamic local memory (the trailing local pointer takes
 * the launch's dynamic local memory). Data[i] == (i % group size) * 2. */
kernel void localmem(global uint *out, local uint *shared_mem) {
  shared_mem[get_local_id(0)] = get_local_id(0) * 2;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = shared_mem[get_local_id(0)];
}
