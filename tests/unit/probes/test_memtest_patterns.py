"""memtest's patterns and passes on the CPU with torch: what each pattern writes, that a clean buffer checks clean, and
that one flipped bit anywhere is found in the right chunk at the right byte with the right expected and found words."""
import pytest

from probe_packages.memtest.passes import BufferTest, run_pass
from probe_packages.memtest.patterns import PATTERNS, PERIOD_WORDS, PatternSource, chunk_seed, hex_word

torch = pytest.importorskip("torch")

CPU = {"kind": "cpu", "index": 0, "torch_device": "cpu"}
CHUNK_WORDS = 4096  # 32 KiB chunks
BUFFER_WORDS = 3 * CHUNK_WORDS + 2 * PERIOD_WORDS  # the last chunk is a short one


def written(name, pass_index, words=BUFFER_WORDS):
    test = BufferTest(torch, CPU, words, CHUNK_WORDS, seed=7)
    test.write(name, pass_index)
    return test


def test_walking_ones_and_zeros_walk_one_bit_through_neighbouring_words():
    ones = written("walking_ones", 3).buffer
    index = torch.arange(BUFFER_WORDS, dtype=torch.int64)
    assert torch.equal(ones, torch.bitwise_left_shift(torch.ones_like(index), (index + 3) % 64))
    assert hex_word(int(ones[60])) == "0x8000000000000000" and int(ones[61]) == 1
    assert torch.equal(written("walking_zeros", 3).buffer, torch.bitwise_not(ones))


def test_address_holds_each_words_byte_offset_and_its_complement_on_odd_passes():
    even, odd = written("address", 0).buffer, written("address", 1).buffer
    assert torch.equal(even, torch.arange(0, BUFFER_WORDS * 8, 8, dtype=torch.int64))
    assert torch.equal(odd, torch.bitwise_not(even))


def test_random_regenerates_the_same_words_and_differs_between_passes_and_chunks():
    first, again, other_pass = written("random", 0).buffer, written("random", 0).buffer, written("random", 1).buffer
    assert torch.equal(first, again)
    assert not torch.equal(first, other_pass)
    assert not torch.equal(first[:CHUNK_WORDS], first[CHUNK_WORDS:2 * CHUNK_WORDS])
    # the whole 64-bit range is used, not only non-negative words
    assert (first < 0).any() and (first > 0).any()
    assert len({chunk_seed(35, pass_index, chunk) for pass_index in range(50) for chunk in range(50)}) == 2500


@pytest.mark.parametrize("name", PATTERNS)
def test_a_clean_buffer_checks_clean(name):
    test = written(name, 5)
    assert test.check(name, 5) == [0, 0, 0, 0]
    record = run_pass(test, name, 6, None, 8)
    assert (record["errors"], record["ranges"], record["ranges_left_out"], record["injected"]) == (0, [], 0, None)


@pytest.mark.parametrize("name", PATTERNS)
@pytest.mark.parametrize("offset, bit", [(0, 0), (CHUNK_WORDS * 8 + 13, 5), (BUFFER_WORDS * 8 - 1, 7)])
def test_one_flipped_bit_is_found_at_its_byte_in_its_chunk(name, offset, bit):
    test = BufferTest(torch, CPU, BUFFER_WORDS, CHUNK_WORDS, seed=7)
    record = run_pass(test, name, 2, {"offset_bytes": offset, "bit": bit}, 8)
    word = offset - offset % 8
    chunk = word // (CHUNK_WORDS * 8)
    assert record["errors"] == 1 and record["ranges_left_out"] == 0
    (found,) = record["ranges"]
    assert found["pattern"] == name and found["pass"] == 2 and found["errors"] == 1
    assert found["error_bytes"] == [word, word + 8]
    assert found["chunk_bytes"] == [chunk * CHUNK_WORDS * 8, min((chunk + 1) * CHUNK_WORDS, BUFFER_WORDS) * 8]
    flipped = 1 << (8 * (offset % 8) + bit)  # little-endian: byte k of a word holds its bits 8k..8k+7
    assert found["first_differing_bits"] == hex_word(flipped)
    assert int(found["first_expected"], 16) ^ int(found["first_found"], 16) == flipped
    assert record["injected"] == {"pattern": name, "pass": 2, "offset_bytes": offset, "bit": bit, "word_offset_bytes": word}


def test_errors_in_several_chunks_are_one_range_each_and_the_ranges_beyond_the_limit_are_counted():
    test = BufferTest(torch, CPU, BUFFER_WORDS, CHUNK_WORDS, seed=7)
    test.write("address", 0)
    for word in (10, 20, CHUNK_WORDS + 1, 3 * CHUNK_WORDS + 5):
        test.buffer[word] += 1 << 40
    counts = test.check("address", 0)
    assert counts == [2, 1, 0, 1]
    first = test.where_wrong("address", 0, 0, 2)
    assert first["error_bytes"] == [80, 168] and first["first_expected"] == hex_word(80)
    assert first["first_found"] == hex_word(80 + (1 << 40))


def test_run_pass_keeps_at_most_the_ranges_left():
    class Flipping(BufferTest):
        def check(self, name, pass_index):
            for word in (1, CHUNK_WORDS + 1, 2 * CHUNK_WORDS + 1):
                self.buffer[word] ^= 1
            return super().check(name, pass_index)

    record = run_pass(Flipping(torch, CPU, BUFFER_WORDS, CHUNK_WORDS, seed=7), "walking_zeros", 0, None, 2)
    assert record["errors"] == 3 and len(record["ranges"]) == 2 and record["ranges_left_out"] == 1


def test_the_expected_word_of_a_report_is_the_patterns():
    source = PatternSource(torch, "cpu", 7)
    scratch = torch.empty(CHUNK_WORDS, dtype=torch.int64)
    source.begin("walking_ones", 0)
    assert source.expected_word("walking_ones", scratch, 64, 0, 0, CHUNK_WORDS, 5) == 1 << 5
    assert source.expected_word("address", scratch, CHUNK_WORDS, 1, 1, CHUNK_WORDS, 2) == ~((CHUNK_WORDS + 2) * 8)
    with pytest.raises(ValueError, match="unknown pattern 'checkerboard'"):
        source.fill("checkerboard", scratch, 0, 0, 0)
