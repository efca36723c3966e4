/* multiargs: parameters of mixed size and alignment; writes A + C to B[0] (work-item 0; nothing
 * when B is NULL, as in launches that only check argument sizes). */
kernel void multiargs(char A, global int *B, short C) {
  if (get_global_id(0) == 0 && B != 0) B[0] = (int)A + (int)C;
}
