/* noargs: a kernel without parameters that does nothing. */
kernel void noargs(void) {}
