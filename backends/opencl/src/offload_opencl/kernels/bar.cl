/* bar: a second program exporting a kernel named foo that writes work-item id + 1. */
kernel void foo(global uint *out) { out[get_global_id(0)] = get_local_id(0) + 1; }
