"""Template helpers for other apps' pages. Render them for the dataset's STEWARD only.

{% load ledger_tags %}
{% budget_panel dataset %}        gauge (spent / reserved / remaining, epsilon and delta),
                                  plotly timeline of spends, link to the ledger page
{% budget_panel dataset chart=False %}   the gauge without the chart
{% remaining_budget dataset %}    one line, e.g. "epsilon 0.6 of 1 left"
"""

from __future__ import annotations

from django import template

from dpportal.ledger import services

register = template.Library()


@register.inclusion_tag("ledger/_budget_panel.html")
def budget_panel(dataset, chart: bool = True):
    budget = services.remaining(dataset)
    return {
        "dataset": dataset,
        "budget": budget,
        "chart": chart and budget["set"],
        "timeline": services.timeline(dataset) if chart and budget["set"] else None,
        "chart_id": f"ledger-timeline-{dataset.pk}",
        "data_id": f"ledger-timeline-{dataset.pk}-data",
    }


@register.simple_tag
def remaining_budget(dataset) -> str:
    return services.remaining_text(dataset)
