/* foo: out[global id] = work-item id (liboffload test: Data[i] == i, 1 group of 64). */
kernel void foo(global uint *out) { out[get_global_id(0)] = get_local_id(0); }
