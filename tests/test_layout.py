"""The layout: the learner's files on top, the engineering in one package, imports running one way."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import config
from conftest import REPO
from engineering import wording

LEARNERS_FILES = {"transformer", "tokenizer", "train", "generate", "talk", "config", "gradcheck", "lab"}
SCRIPTS = {"train", "generate", "talk", "lab"}  # only run, never imported: what they share is in a module
PACKAGE = "engineering"
OTHER_CODE = ("exercises", "benchmarks", "examples")  # folders of files that are run, none of them imported


def project_modules():
    """{module name: path} of the top level's modules and the package's ("engineering.runs")."""
    modules = {path.stem: path for path in REPO.glob("*.py")}
    modules.update({f"{PACKAGE}.{path.stem}": path for path in (REPO / PACKAGE).glob("*.py") if path.stem != "__init__"})
    return modules


def project_files():
    """{a name for it: path} of every Python file of the project but the tests: the modules, and the files of
    OTHER_CODE ("exercises/guided/03_layernorm.py")."""
    files = project_modules()
    files.update({path.relative_to(REPO).as_posix(): path for folder in OTHER_CODE
                  for path in sorted((REPO / folder).rglob("*.py"))})
    return files


def imported_by_name(node):
    """The module that importlib.import_module("name") or __import__("name") loads, where name is written out."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if function in ("import_module", "__import__"):
            return node.args[0].value
    return None


def imports(path, module_level_only=False):
    """The modules a file imports, wherever it does (from x import y gives x, and x.y where that is a module of the
    package; importlib.import_module("x") gives x); with module_level_only, the import statements at the top."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif imported_by_name(node):
            found.add(imported_by_name(node))
    return found


def project_imports(files=None):
    """{name: the project's modules it imports} of the modules (or of files, {name: path})."""
    modules = project_modules()
    return {name: imports(path) & set(modules) for name, path in (files or modules).items()}


def test_the_top_level_holds_only_the_learners_files():
    assert {path.stem for path in REPO.glob("*.py")} <= LEARNERS_FILES


def test_the_model_and_the_tokenizer_import_only_the_standard_library_and_numpy():
    for name in ("transformer", "tokenizer"):
        outside = {module.split(".")[0] for module in imports(REPO / f"{name}.py", module_level_only=True)}
        outside -= set(sys.stdlib_module_names) | {"numpy"}
        assert not outside, f"{name}.py imports {sorted(outside)} at module level"


def test_nothing_imports_a_script():
    importers = {name: sorted(imported & SCRIPTS) for name, imported in project_imports(project_files()).items()
                 if imported & SCRIPTS}
    assert not importers, f"these import a script, which is only run: {importers}"


def test_the_package_imports_only_the_learners_files_that_are_no_script_nor_config():
    for name, imported in project_imports().items():
        if name.startswith(f"{PACKAGE}."):
            above = {module for module in imported if not module.startswith(PACKAGE)}
            assert above <= {"transformer", "tokenizer", "gradcheck"}, f"{name} imports {sorted(above)} from the top"


def test_the_layout_sees_an_import_inside_a_function_and_one_by_name(tmp_path):
    (tmp_path / "late.py").write_text('def main():\n    import train\n    return importlib.import_module("lab")\n')
    assert imports(tmp_path / "late.py") == {"train", "lab"}
    assert imports(tmp_path / "late.py", module_level_only=True) == set()


def test_no_import_circle():
    graph = project_imports()  # every import, inside a function or by name too

    def reaches(start, target, seen):
        for module in graph[start]:
            if module == target or (module not in seen and reaches(module, target, seen | {module})):
                return True
        return False

    circles = [name for name in graph if reaches(name, name, {name})]
    assert not circles, f"these modules import themselves through others: {circles}"


def loaded_by_import(module):
    """(the project's modules, whether pandas is among them) that `import module` loads in a fresh interpreter."""
    said = subprocess.run([sys.executable, "-c", f"import sys, {module}; print(' '.join(sys.modules))"],
                          cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return {name for name in said if name in project_modules() or name == PACKAGE}, "pandas" in said


@pytest.mark.parametrize("module, at_most", [("train", 12), ("generate", None), ("talk", None)])
def test_importing_a_script_loads_a_few_modules_and_no_pandas(module, at_most):
    loaded, pandas = loaded_by_import(module)
    assert at_most is None or len(loaded) <= at_most, f"import {module} loads {len(loaded)}: {sorted(loaded)}"
    assert not pandas, f"import {module} imports pandas, which only reading a CSV needs"


def test_the_package_names_config_pys_home():
    assert wording.HOME == Path(config.checkpoint)


def test_every_test_that_needs_pytorch_skips_with_the_one_reason():
    # conftest.torch_or_skip says it; a test that asks for torch by itself would say it another way
    asking = {path.name for path in (REPO / "tests").glob("*.py")
              if any(call in path.read_text(encoding="utf-8") for call in ('importorskip("torch"', "import torch\n"))}
    # conftest says it, torch_gpt.py is imported after it, and this test names what it looks for
    assert asking <= {"conftest.py", "torch_gpt.py", Path(__file__).name}, \
        f"ask for PyTorch with conftest.torch_or_skip(): {sorted(asking)}"
