# The workshop's two commands (see README.md), plus a few conveniences.
# Everything lives in .venv at the repository root.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

# torch is installed on its own, before the package, so that a CPU-only machine never
# resolves to the multi-GB CUDA build. With an NVIDIA driver (nvidia-smi): the default (CUDA) build.
# Without one: the pinned release from a wheel already on disk (pip's find-links) when there is one,
# else from PyTorch's CPU-only index, never PyPI's default Linux build (which bundles CUDA).
# Override either, e.g. `make workshop TORCH_SPEC=torch TORCH_INDEX=https://download.pytorch.org/whl/cpu`.
HAS_GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
TORCH_SPEC ?= $(if $(HAS_GPU),torch,torch==2.13.0)
TORCH_INDEX ?= $(if $(HAS_GPU),,https://download.pytorch.org/whl/cpu)
TORCH_INDEX_FLAG := $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

# The notebooks' kernel, registered inside .venv (--sys-prefix) so that .venv's JupyterLab, nbval and
# papermill find it on a fresh clone without touching the user's own Jupyter setup.
KERNEL_NAME := pretraining-data
KERNEL_DISPLAY := Pretraining data (.venv)
REGISTER_KERNEL = $(PY) -m ipykernel install --sys-prefix --name $(KERNEL_NAME) --display-name "$(KERNEL_DISPLAY)"
KERNEL_SPEC := $(VENV)/share/jupyter/kernels/$(KERNEL_NAME)/kernel.json

.PHONY: workshop test lab corpus preflight clean mutation

# One run of every notebook in order (02 writes what 03-05 read), by the same machinery as the grids in
# notebooks/grids/: executed copies, run.log, summary.json, summary.md and figures/ in runs/workshop/.
workshop: $(VENV)/.installed $(KERNEL_SPEC) corpus  ## build the corpus and execute every notebook into runs/workshop/
	$(PY) -m helpers.runs $(NOTEBOOKS) --out runs/workshop

# pytest-xdist workers (TEST_WORKERS=0: one process); the root conftest.py keeps together on one worker what must
# run together (notebooks that share a data/ folder, a test module's fixtures). Three on a 2-core machine: the third
# runs while the others wait on the kernels and processes their tests start.
TEST_WORKERS ?= 3

test: $(VENV)/.installed-test $(KERNEL_SPEC)  ## run the whole test suite
	$(PY) -m pytest -q -n $(TEST_WORKERS)

corpus: $(VENV)/.installed  ## build the default real corpus in data/raw (skipped when complete)
	$(PY) -m helpers.corpus --out data/raw

preflight:  ## is this machine ready? Python, disk, torch, corpus and kernel: one line each, with its fix
	@test -x $(PY) || { echo "FAIL  venv    no .venv in this folder; fix: make workshop"; exit 1; }
	@$(PY) -m helpers.workshop.preflight

lab: $(VENV)/.installed $(KERNEL_SPEC)  ## open JupyterLab on the notebooks, on this machine only (127.0.0.1)
	$(PY) -m jupyter lab --ip 127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root,) notebooks/

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Every package installs with uv (parallel downloads, unpacking and compiling: 28 s on a 2-core machine where pip
# takes 94 s), pinned by constraints.txt. uv goes to PyPI, or to PIP_INDEX_URL when that is set; where it cannot
# (a mirror only pip's configuration names), pip installs instead. `make ... INSTALLER=pip` uses pip alone.
INSTALLER ?= uv
UV := $(VENV)/bin/uv
UV_INDEX_FLAG := $(if $(PIP_INDEX_URL),--index-url $(PIP_INDEX_URL),)
PIP_INSTALL = $(PIP) install -c constraints.txt
UV_INSTALL = $(UV) pip install --python $(PY) --compile-bytecode $(UV_INDEX_FLAG) -c constraints.txt
INSTALL_OR_PIP = $(if $(filter pip,$(INSTALLER)),$(PIP_INSTALL) $(1),$(UV_INSTALL) $(1) \
	|| { echo "uv could not install; pip installs instead"; $(PIP_INSTALL) $(1); })
INSTALLER_PREREQUISITE = $(if $(filter pip,$(INSTALLER)),,$(UV))

$(UV): | $(VENV)/bin/python
	$(PIP) install -q "uv>=0.5"

# Without a GPU: a wheel on disk first (torch alone from pip's find-links folder, then its dependencies from the
# index, torch being there already), by uv where pip's settings name such a folder (uv does not read them), else
# by pip; failing that, torch and its dependencies from TORCH_INDEX.
FIND_LINKS = $(firstword $(or $(PIP_FIND_LINKS),$(shell $(PIP) config get global.find-links 2>/dev/null)))
UV_LOCAL_TORCH = $(if $(filter pip,$(INSTALLER)),false,$(if $(FIND_LINKS),$(UV) pip install --python $(PY) \
	--compile-bytecode --no-index --no-deps --find-links $(FIND_LINKS) "$(TORCH_SPEC)" >/dev/null 2>&1 \
	&& $(UV_INSTALL) "$(TORCH_SPEC)",false))
PIP_LOCAL_TORCH = $(PIP) install --no-index --no-deps "$(TORCH_SPEC)" >/dev/null 2>&1 && $(PIP) install "$(TORCH_SPEC)"
LOCAL_TORCH = $(if $(HAS_GPU),false,($(UV_LOCAL_TORCH)) || ($(PIP_LOCAL_TORCH)))

$(VENV)/.torch: | $(VENV)/bin/python $(INSTALLER_PREREQUISITE)
	$(PY) -c "import torch" 2>/dev/null || ($(LOCAL_TORCH)) || $(PIP) install $(TORCH_INDEX_FLAG) "$(TORCH_SPEC)"
	touch $@

# uv and pip compile the packages they install, but not this editable package's own source: compiled here once, so
# that a machine that writes no bytecode at import (PYTHONDONTWRITEBYTECODE) does not compile it in every process.
COMPILE_HELPERS = $(PY) -m compileall -q -j 0 helpers >/dev/null
# numba compiles a loop in the first process that runs it and keeps the machine code for the next: the quality
# filters' loops (the English splitter's and the n-gram measures', about 8 CPU s) are compiled here once, so that a
# first cleaning command, or each of the test suite's first processes, does not compile them again.
COMPILE_LOOPS = $(PY) -c "from helpers.clean.steps.filters import FILTERS; FILTERS['gopher-repetition']().warm_up()"

$(VENV)/.installed: pyproject.toml constraints.txt $(VENV)/.torch | $(INSTALLER_PREREQUISITE)
	$(call INSTALL_OR_PIP,-e ".[workshop]")
	$(COMPILE_HELPERS)
	$(COMPILE_LOOPS)
	$(REGISTER_KERNEL)
	touch $@

$(VENV)/.installed-test: pyproject.toml constraints.txt $(VENV)/.torch | $(INSTALLER_PREREQUISITE)
	$(call INSTALL_OR_PIP,-e ".[test]")
	$(COMPILE_HELPERS)
	$(COMPILE_LOOPS)
	$(REGISTER_KERNEL)
	touch $@ $(VENV)/.installed

# A .venv installed before the kernel was registered gets it here.
$(KERNEL_SPEC): | $(VENV)/bin/python
	$(REGISTER_KERNEL)

# Mutation testing of the rules' code (pyproject.toml's [tool.mutmut]; hours on 2 cores, so outside `make test`):
# mutmut works in mutants/ and picks up where it stopped; docs/mutation.md gets the report. MUTANTS runs only those
# mutants, again where they have a result, e.g. `make mutation MUTANTS='helpers.loading.schedule*'`.
# One thread each: mutmut forks each mutant's run from a server process, and a child of a process whose thread
# pools (OpenMP, numba, fastokens' rayon) have started can hang.
MUTANTS ?=
MUTATION_CHILDREN ?= 2  # mutants tested at once, each in a process of its own
MUTATION_EXTRAS := .[test,mutation]
mutation: $(VENV)/.installed-test $(KERNEL_SPEC)  ## plant small bugs in the rules' code, count those the tests catch
	$(call INSTALL_OR_PIP,-e "$(MUTATION_EXTRAS)")
	start=$$(date +%s); OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
	  $(VENV)/bin/mutmut run --max-children $(MUTATION_CHILDREN) $(if $(MUTANTS),'$(MUTANTS)') \
	  || exit 1; \
	  $(PY) tests/mutation_report.py --seconds $$(( $$(date +%s) - start )) \
	  --machine "$$(nproc) cores$(if $(HAS_GPU),, and no GPU)" > docs/mutation.md.part && mv docs/mutation.md.part docs/mutation.md
	@sed -n 5p docs/mutation.md

clean:  ## remove generated data and runs (keeps .venv)
	rm -rf runs data/raw data/megatron data/tokenizers data/cache
