/* single_counter: *out = *init_val + init_loop * addend, computed by a deliberately slow loop
 * (a volatile accumulator the compiler cannot fold) on one work-item. */
kernel void single_counter(int init_loop, int addend, global uint *init_val, global uint *out) {
  if (get_global_id(0) != 0 || get_global_id(1) != 0 || get_global_id(2) != 0) return;
  volatile uint acc = *init_val;
  for (int i = 0; i < init_loop; ++i) acc += (uint)addend;
  *out = acc;
}
