/* byte: a kernel with a single one-byte parameter that does nothing. */
kernel void byte(uchar c) { (void)c; }
