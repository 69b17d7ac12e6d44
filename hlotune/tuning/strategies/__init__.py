"""Search strategies behind one ask/tell interface (base.py), each in its own module, built by
name from the registry (registry.py) with what the tune hands them (parts.py)."""
