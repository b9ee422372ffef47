"""What a probe wrote, judged as text: unclean strings named by their path, bytes kept in a form Ansible carries,
secret-looking environment values redacted without garbling ordinary words."""
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_output_text import (
    carryable,
    escaped,
    json_string_problem,
    transportable,
    utf8_problem,
)
from ansible_collections.gpufleet.validation.plugins.module_utils.secret_redaction import SecretRedactor, is_secret_name


def test_the_first_unclean_string_is_named_by_its_path_keys_included():
    assert json_string_problem({"data": {"gpus": [{"name": "ok"}, {"name": "a\ud800"}]}}) == (
        "data.gpus[1].name holds a lone surrogate U+D800")
    assert json_string_problem({"data": {"bell\x07": 1}}) == "the key data.bell\\x07 holds the control character U+0007"
    assert json_string_problem({"reason": "line one\nline two\ttabbed\r\n"}) is None
    assert json_string_problem({"gpu": "H200 \u00e9\U0001f600"}) is None
    assert json_string_problem({"x": "\x85"}) == "x holds the control character U+0085"


def test_bytes_that_are_not_utf8_are_located_and_kept_as_escapes():
    assert utf8_problem(b'{"a": "b"}') is None
    assert utf8_problem(b'{\n "a": "eth\xff0"}').startswith("byte 0xff at offset 12 (line 2, column 11) is not UTF-8")
    assert transportable(b"eth\xff0 \xc3\xa9") == "eth\\xff0 \u00e9"


def test_what_the_module_returns_can_always_be_encoded_as_utf8():
    result = carryable({"k\udcff": ["eth\udcff0", 1, None, {"ok": "\u00e9"}]})
    assert result == {"k\\udcff": ["eth\\udcff0", 1, None, {"ok": "\u00e9"}]}
    assert escaped("a\x1b[31m\ud800") == "a\\x1b[31m\\ud800"


def test_secret_looking_names_are_substrings_in_any_case():
    for name in ("HF_TOKEN", "aws_secret_access_key", "PGPASSWORD", "MYSQL_PWD_PASSWD", "api_key", "GH_AUTH",
                 "AWS_SESSION_TOKEN", "SSH_PRIVATE", "GOOGLE_APPLICATION_CREDENTIALS", "COOKIE_JAR"):
        assert is_secret_name(name), name
    for name in ("PATH", "CUDA_VISIBLE_DEVICES", "NCCL_SOCKET_IFNAME", "HOME"):
        assert not is_secret_name(name), name


def test_long_values_are_redacted_everywhere_short_ones_only_as_their_variables_value():
    redactor = SecretRedactor({"HF_TOKEN": "hf_0123456789", "XDG_SESSION_CLASS": "user", "DB_PASS_KEY": "1",
                               "PATH": "/usr/bin"})
    text = ("HF_TOKEN=hf_0123456789\nsaw hf_0123456789 alone\nXDG_SESSION_CLASS=user\nthe user ran it\n"
            "{'DB_PASS_KEY': '1', 'PATH': '/usr/bin'}\n\"DB_PASS_KEY\": \"1\"\ncount 1\n")
    assert redactor.text(text) == (
        "HF_TOKEN=<redacted: $HF_TOKEN>\nsaw <redacted: $HF_TOKEN> alone\n"
        "XDG_SESSION_CLASS=<redacted: $XDG_SESSION_CLASS>\n"
        "the user ran it\n{'DB_PASS_KEY': '<redacted: $DB_PASS_KEY>', 'PATH': '/usr/bin'}\n"
        "\"DB_PASS_KEY\": \"<redacted: $DB_PASS_KEY>\"\ncount 1\n")
    assert redactor.redacted == {"HF_TOKEN", "XDG_SESSION_CLASS", "DB_PASS_KEY"}


def test_a_value_is_redacted_as_json_writes_it_too():
    redactor = SecretRedactor({"API_KEY": 'p"ss\\w\u00f6rd-long'})
    assert redactor.deep({"v": ['x p\\"ss\\\\w\\u00f6rd-long y']}) == {"v": ["x <redacted: $API_KEY> y"]}
