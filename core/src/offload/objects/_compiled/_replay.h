/* _replay.h - the declared interface between the object layer's Python and its C methods
 * (offload.objects._compiled._replay), version OFFLOAD_REPLAY_VERSION. objects/_records.py declares the same
 * names and version on the Python side and refuses an extension of another version.
 *
 * "Verdicts, not twins": the copy and launch decisions are written once, in Python
 * (_buffer.fast_copy, Kernel._run and same_call). Having decided, Python publishes a verdict on
 * a record: "a call of this method with exactly these objects makes this flat call". A C method
 * replays a verdict for exactly the objects it was made for (compared by identity, never by
 * value) while the stamps it was made under still hold, and calls the Python method for every
 * other call. The C code reads the structs below and nothing else of the layer: no class's slots,
 * no module attribute.
 *
 * Records are the C base types of the layer's classes (a pure-Python class of the same slot
 * names stands in where the extension is not used). Their fields are Python attributes of the
 * names given, which Python fills; C reads them.
 */
#ifndef OFFLOAD_OBJECTS_REPLAY_H
#define OFFLOAD_OBJECTS_REPLAY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define OFFLOAD_REPLAY_VERSION 1

/* The stamps (`STAMPS`): a verdict holds while `closes` is what it was when Python began to decide. */
typedef struct {
  unsigned long long closes; /* `closes`: bumped by Python (`STAMPS.close()`) when a Buffer's memory
                                goes (close, invalidate), the layer drops its session reference, or
                                the process forked: an address, a session may have changed */
  unsigned long long births; /* `births`: the serial the last record made was given */
} offload_replay_stamps;

/* The head of a record a copy verdict names: `serial` (read-only to Python) is the record's
 * birth number, unique in the process, so that a verdict naming a record by its address and
 * serial never takes a new object at a dead one's address for it. */
#define OFFLOAD_RECORD_HEAD \
  PyObject_HEAD             \
  unsigned long long serial;

typedef struct {
  OFFLOAD_RECORD_HEAD
} offload_record;

/* MemoryRecord: the base of Buffer and Array. */
typedef struct {
  OFFLOAD_RECORD_HEAD
  PyObject *copied; /* `_copied`: the CopyVerdict of the last copy into this object (or NULL) */
} offload_memory_record;

/* QueueRecord: the base of Queue. */
typedef struct {
  OFFLOAD_RECORD_HEAD
  PyObject *handle;   /* `_handle`: the flat QueueHandle */
  PyObject *inflight; /* `_inflight`: the list holding the objects of enqueued work until a sync */
} offload_queue_record;

/* KernelRecord: the base of Kernel. */
typedef struct {
  PyObject_HEAD
  PyObject *memo;          /* `_memo`: the LaunchVerdict of the kernel's last launch that may be reused */
  PyObject *memo_previous; /* `_memo_previous`: the one before */
} offload_kernel_record;

/* CopyVerdict (published by `publish_copy(destination, kind, items, call, stamp)` as the
 * destination's `_copied`): a call of the copy method `kind` with exactly `items` (its arguments,
 * self first, keywords in declared order, defaults filled in; an exact int stands for its value)
 * makes `call` (`call[0](*call[1:])`: the flat olMemcpy and its arguments), while `closes` is
 * `stamp`. Records among the items are named by address and serial only (never referenced: a
 * verdict keeps no temporary alive), other items referenced. Immutable. */
#define OFFLOAD_COPY_ITEMS 5
typedef struct {
  PyObject_HEAD
  int kind;
  Py_ssize_t n;
  PyObject *items[OFFLOAD_COPY_ITEMS];
  unsigned long long serials[OFFLOAD_COPY_ITEMS]; /* a record's serial (items[i] not referenced) */
  PyTypeObject *types[OFFLOAD_COPY_ITEMS];          /* a record's class (referenced): checked before its serial is read */
  unsigned owned; /* bit i: items[i] is referenced */
  PyObject *call; /* a tuple: the callable, then its arguments */
  unsigned long long stamp;
} offload_copy_verdict;

/* LaunchVerdict: a launch of `owner` with exactly `args`, `grid`, `block` and `shared_memory`
 * (the very objects) makes `launch(queue, device, kernel, data, sizes)` on the flat queue handle
 * (None: synchronously), while `closes` holds. `first`, `first_class`, `second`, `second_class`:
 * where the scalars are and their classes: there an argument of exactly that class and the
 * remembered value (an int or a float: never a 0.0, which Python does not remember) is the one
 * remembered; every other argument must be the very object. Immutable; a queue holds it until
 * its sync (it holds the arguments and the kernel). */
typedef struct {
  PyObject_HEAD
  PyObject *args; /* a tuple */
  PyObject *grid, *block, *shared_memory;
  unsigned long long closes;
  PyObject *launch, *device, *kernel, *data, *sizes;
  Py_ssize_t first, second;
  PyObject *first_class, *second_class, *owner;
} offload_launch_verdict;

#endif
