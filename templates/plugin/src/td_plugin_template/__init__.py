"""tensordict-plugin-template: a tensordict plugin.

Its hooks are in :mod:`td_plugin_template._plugin`, what they add in the other modules.
"""

from td_plugin_template._numel import total_numel

__all__ = ["total_numel"]
__version__ = "0.1.0"
