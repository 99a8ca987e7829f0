"""Typed results to what people read: compat model, Markdown/JSON, dashboard, JUnit, summaries."""
