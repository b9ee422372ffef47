"""Issue 47: the tools that write a generated file (rules_list, profile_table, params_tables) share one entry,
tools/generated_file.py: --check names each file that differs and exits 1, else the files that differ are rewritten."""
from tool_module import load_tool

GENERATED = load_tool("generated_file")


def _files(tmp_path):
    fresh, old, unmarked = tmp_path / "fresh.md", tmp_path / "old.md", tmp_path / "unmarked.md"
    fresh.write_text("<!-- t -->1<!-- /t -->\n", encoding="utf-8")
    old.write_text("<!-- t -->0<!-- /t -->\n", encoding="utf-8")
    unmarked.write_text("no markers\n", encoding="utf-8")

    def make(text):
        if "<!-- t -->" not in text:
            raise ValueError("no <!-- t --> marker")
        return "<!-- t -->1<!-- /t -->\n"
    return [GENERATED.Generated(str(path), path.name, make) for path in (fresh, old, unmarked)] + [
        GENERATED.Generated(str(tmp_path / "absent.yaml"), "absent.yaml", lambda unused_text: "made\n")]


def test_check_names_each_file_that_differs_or_cannot_be_made_and_exits_1(tmp_path, capsys):
    files = _files(tmp_path)
    assert GENERATED.stale(files, "the tables") == ["old.md differs from the tables", "unmarked.md: no <!-- t --> marker",
                                                    "absent.yaml differs from the tables"]
    assert GENERATED.main(["--check"], "tools/x.py", "A tool.\n\nMore.", lambda: files, "the tables") == 1
    assert capsys.readouterr().out.splitlines()[-1] == "run python tools/x.py"
    assert (tmp_path / "old.md").read_text(encoding="utf-8") == "<!-- t -->0<!-- /t -->\n"  # --check writes nothing


def test_without_check_the_files_that_differ_are_rewritten(tmp_path, capsys):
    files = [generated for generated in _files(tmp_path) if generated.what != "unmarked.md"]
    assert GENERATED.main([], "tools/x.py", "A tool.", lambda: files, "the tables") == 0
    assert (tmp_path / "old.md").read_text(encoding="utf-8") == "<!-- t -->1<!-- /t -->\n"
    assert (tmp_path / "absent.yaml").read_text(encoding="utf-8") == "made\n"
    assert GENERATED.main(["--check"], "tools/x.py", "A tool.", lambda: files, "the tables") == 0
    assert capsys.readouterr().out == "nothing differs from the tables\n"
