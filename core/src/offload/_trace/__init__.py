"""Call tracing (``OFFLOAD_TRACE``) and the timeline (``OFFLOAD_TRACE=perfetto``), per process and per job.
"""
