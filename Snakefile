# tilelang-churn: per-pass IR churn of TileLang's GEMM lowering over shapes x targets x trace modes.
# Config: config/config.yaml (documented in config/README.md, validated by
# workflow/schemas/config.schema.yaml). Run: snakemake --cores 4; book figures: snakemake --cores 4 book_figures;
# report: snakemake --report results/report.html

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/environment.smk"
include: "workflow/rules/trace_common.smk"
include: "workflow/rules/gpu_common.smk"
include: "workflow/rules/book_common.smk"


rule all:
    default_target: True
    input:
        get_final_output(),
        get_book_outputs(),


include: "workflow/rules/static.smk"
include: "workflow/rules/trace.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/book.smk"
include: "workflow/rules/gpu.smk"
include: "workflow/rules/knockout.smk"
