"""GRPO training on accepted toolscale tasks (rollouts in forked environments)."""
