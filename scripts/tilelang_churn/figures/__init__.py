"""Every figure and HTML page of the workflow and of the book, in one style."""

__all__ = [
    "agg_text_cache",
    "book_figures",
    "compare_pages",
    "figure_style",
    "heatmap",
    "knockout_figures",
    "knockout_pages",
    "page_templates",
    "plot_churn",
    "release_figures",
    "speed_figures",
]
