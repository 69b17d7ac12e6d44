"""Compiling and timing configs on this machine in a way a shared 2-core box can trust:
interleaved rounds in worker processes (forked warm), output checks, and the machine key."""
