"""The FreshStack-style benchmark builder: questions, corpus, nuggets, pooling, judging, export.

Each stage is a function over values (see :mod:`.pipeline` for the plan-driven runner and
``nuggetbench build PLAN.toml`` for the command). Nothing heavy is imported here.
"""
