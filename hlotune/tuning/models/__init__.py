"""The cost models of the tuning loop: what ranks a program's candidate configs before they are
measured (base.py), and learns from those measured."""
