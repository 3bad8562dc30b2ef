# The book's figures (chapter 12, example 4): scripts/book_figures.py draws the fixed set under
# results/book/<figure_language>/ from the book kernel's jobs, and figure 3 in a job of its own from the comparison
# of releases. The reference job, the outputs and the input functions are in book_common.smk;
# `snakemake --cores 4 book_figures` makes them.


rule book_figures_render:
    input:
        unpack(get_book_inputs),
    output:
        **book_rule_outputs(),
    log:
        f"logs/book/book_figures_{config['figure_language']}.log",
    # Local on a cluster: four figures from the tables, seconds; a queue wait costs more.
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: book_threads
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        language=config["figure_language"],
        width_cm=config["book_figure_width_cm"],
        out_dir=lambda wildcards, output: str(Path(output.manifest).parent),
        # figure 3 is book_releases_figure's; FIGURES.md lists it
        releases_apart=GRID.compares_releases,
        sources=trace_modes.sources_text(),
    script:
        "../../scripts/book_figures.py"


# Figure 3 (releases) on its own: it reads only the comparison's table, so adding a release reruns it and none of
# the other three.
rule book_releases_figure:
    input:
        unpack(get_book_releases_inputs),
    output:
        **book_figure_outputs([BOOK_RELEASES_FIGURE]),
    log:
        f"logs/book/book_releases_figure_{config['figure_language']}.log",
    localrule: True
    conda:
        "../envs/tilelang.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        language=config["figure_language"],
        width_cm=config["book_figure_width_cm"],
        out_dir=lambda wildcards, output: str(Path(output[0]).parent),
        sources=trace_modes.sources_text(),
    script:
        "../../scripts/book_figures.py"


# `snakemake --cores 4 book_figures`: the book's figures (and what they need: traces, tables, comparison).
rule book_figures:
    input:
        rules.book_figures_render.output,
        rules.book_releases_figure.output if GRID.compares_releases else [],
