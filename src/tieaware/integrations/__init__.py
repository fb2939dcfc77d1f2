"""Bridges to other tools, each an optional import: `tieaware.integrations.ir_measures`
(tie-aware measures for ``ir_measures`` and PyTerrier's ``pt.Experiment``),
`tieaware.integrations.torchmetrics` (a torchmetrics ``Metric``) and
`tieaware.integrations.sentence_transformers` (evaluators for its trainers)."""
