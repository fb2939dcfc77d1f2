"""Bridges to other IR tools, each an optional import: `tieaware.integrations.ir_measures`
(tie-aware measures for ``ir_measures`` and PyTerrier's ``pt.Experiment``)."""
