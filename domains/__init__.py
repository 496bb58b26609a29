"""What a domain is and how it runs: spec, loader, sandboxed tools, record API, Environment.

The ten built-in domains live in the sub-folders. This package imports nothing else of toolscale.
"""

from .domain import BUILTIN_DOMAINS, Domain, DomainError, available_domains, builtin_domain, load_domain, load_domain_text
from .environment import Environment, ToolResult, replay
from .limits import StepBudgetExceeded
from .sandbox import ToolCompileError, ToolError
from .spec import DomainSpec
from .tasks import Task

__all__ = ["BUILTIN_DOMAINS", "Domain", "DomainError", "DomainSpec", "Environment", "StepBudgetExceeded", "Task",
           "ToolCompileError", "ToolError", "ToolResult", "available_domains", "builtin_domain",
           "load_domain", "load_domain_text", "replay"]
