/* localmem_reduction: every work-item stores 2 into dynamic local memory, then work-item 0 sums
 * them into out[group]. out[g] == 2 * group size. */
kernel void localmem_reduction(global uint *out, local uint *shared_mem) {
  shared_mem[get_local_id(0)] = 2;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0) {
    uint sum = 0;
    for (uint i = 0; i < get_local_size(0); ++i) sum += shared_mem[i];
    out[get_group_id(0)] = sum;
  }
}
