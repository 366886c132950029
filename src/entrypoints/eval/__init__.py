"""`firmsift eval`: inputs, runs and the Markdown/HTML reports."""
