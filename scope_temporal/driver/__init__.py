"""The one driver of each machine, for any engine.

A machine (`scope_temporal.interaction`) decides; a driver carries: it starts what the
machine asks for through a transport and feeds back what came of it. Temporal's
workflows (`scope_temporal.workflows`) and `LocalRunner` (`scope_temporal.testing`) are
two transports of the same drivers, so every rule runs the same code on both.
"""
