/* sequence: one Fibonacci step per launch, inout[idx] from the two before it (work-item 0 of
 * group 0). Launched with idx = 0, 1, 2, ... it checks that launches run in queue order. */
kernel void sequence(uint idx, global uint *inout) {
  if (get_global_id(0) != 0 || get_global_id(1) != 0 || get_global_id(2) != 0) return;
  if (idx == 0) inout[0] = 0;
  else if (idx == 1) inout[1] = 1;
  else inout[idx] = inout[idx - 1] + inout[idx - 2];
}
