"""MNIST: reading the real files, the offline split, and safe, verified downloads.

Real data comes from the shared directory (the ``mnist_dir`` fixture). Downloads
are exercised against a local HTTP server on 127.0.0.1 and ``file://`` URLs:
these tests never touch the internet.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dezero_like import datasets
from dezero_like.datasets import MNIST, IDXError, MNISTUnavailableError, load_idx

TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
# digit counts of the official 10,000-image test set
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test here may download from the internet; the ones that test downloads opt back in."""
    monkeypatch.setenv("DEZERO_LIKE_OFFLINE", "1")
    monkeypatch.delenv("DEZERO_LIKE_DATA", raising=False)


@pytest.fixture(scope="module")
def test_set(mnist_dir):
    return MNIST(train=False, data_dir=mnist_dir.parent)


# --------------------------------------------------------------------------- #
# Reading the real files
# --------------------------------------------------------------------------- #


def test_test_set_has_the_published_shape_and_labels(test_set):
    assert len(test_set) == 10000
    assert test_set.data.shape == (10000, 1, 28, 28) and test_set.data.dtype == np.uint8
    assert test_set.label.dtype == np.int64
    assert np.bincount(test_set.label).tolist() == TEST_COUNTS
    assert test_set.label[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert test_set.data.max() == 255 and test_set.data.min() == 0


def test_default_transform_gives_flat_float32_in_unit_range(test_set):
    x, t = test_set[0]
    assert x.shape == (784,) and x.dtype == np.float32
    assert 0.0 <= x.min() and x.max() <= 1.0
    np.testing.assert_allclose(x * 255, test_set.data[0].reshape(-1))
    assert t == 7


def test_transform_none_gives_the_raw_image(mnist_dir):
    raw = MNIST(train=False, transform=None, data_dir=mnist_dir.parent)
    x, _ = raw[3]
    assert x.shape == (1, 28, 28) and x.dtype == np.uint8


def test_data_dir_from_environment_variable(mnist_dir, monkeypatch):
    monkeypatch.setenv("DEZERO_LIKE_DATA", str(mnist_dir.parent))
    ds = MNIST(train=False)
    assert ds.root == mnist_dir and len(ds) == 10000


def test_default_data_dir_is_in_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert datasets.data_root() == tmp_path / ".dezero_like"


def test_test_split_is_8000_then_2000_of_the_test_images(mnist_dir, test_set):
    train = MNIST(train=True, source="test-split", data_dir=mnist_dir.parent)
    test = MNIST(train=False, source="test-split", data_dir=mnist_dir.parent)
    assert (len(train), len(test)) == (8000, 2000)
    np.testing.assert_array_equal(np.concatenate([train.data, test.data]), test_set.data)
    np.testing.assert_array_equal(np.concatenate([train.label, test.label]), test_set.label)
    assert "first 8,000 of the 10,000 MNIST test images" in train.note
    assert "last 2,000" in test.note


def test_training_set_missing_offline_is_a_clear_error(mnist_dir, tmp_path):
    # a cache of its own (the user's may hold the training images): the test files, plus the
    # training labels where they are at hand, but never the training images
    folder = tmp_path / "mnist"
    folder.mkdir()
    names = ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz"]
    for name in names:
        if (mnist_dir / name).exists():
            shutil.copy(mnist_dir / name, folder / name)
    with pytest.raises(MNISTUnavailableError) as info:
        MNIST(train=True, data_dir=tmp_path)
    msg = str(info.value)
    assert "train-images-idx3-ubyte.gz" in msg
    labels_here = (folder / "train-labels-idx1-ubyte.gz").exists()
    assert ("train-labels" in msg) != labels_here  # only what is missing is named
    assert str(folder) in msg
    assert "DEZERO_LIKE_DATA" in msg and "DEZERO_LIKE_OFFLINE" in msg
    assert "source='test-split'" in msg
    assert isinstance(info.value, FileNotFoundError)


def test_empty_cache_offline_names_every_missing_file(tmp_path):
    with pytest.raises(MNISTUnavailableError, match="t10k-images.*t10k-labels") as info:
        MNIST(train=False, data_dir=tmp_path)
    assert str(tmp_path / "mnist") in str(info.value)
    assert not (tmp_path / "mnist").exists() or not any((tmp_path / "mnist").iterdir())


def test_download_false_refuses_even_when_online(tmp_path, monkeypatch):
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    with pytest.raises(MNISTUnavailableError, match=r"download=False"):
        MNIST(train=False, data_dir=tmp_path, download=False)


def test_mnist_train_test_falls_back_to_the_split_and_says_why(mnist_dir):
    train, test = datasets.mnist_train_test(data_dir=mnist_dir.parent)
    assert (len(train), len(test)) == (8000, 2000)
    assert train.source == test.source == "test-split"
    assert train.summary.startswith("training on 8,000 of the 10,000 MNIST test images because "
                                    "the training set is not available offline")
    assert "DEZERO_LIKE_OFFLINE=1" in train.fallback_reason


def test_mnist_train_test_uses_the_real_training_set_when_cached(tmp_path, mnist_dir):
    """A cache holding all four verified files gives the official split (fake-free:
    the training files here are the real test files, so MD5s are patched per instance)."""
    root = tmp_path / "mnist"
    root.mkdir()
    for name in (TEST_IMAGES, TEST_LABELS):
        (root / name).write_bytes((mnist_dir / name).read_bytes())

    class TestFilesAsTraining(MNIST):
        FILES = {**MNIST.FILES, "train-images": MNIST.FILES["test-images"],
                 "train-labels": MNIST.FILES["test-labels"]}

    assert TestFilesAsTraining.available(train=True, data_dir=tmp_path)
    ds = TestFilesAsTraining(train=True, data_dir=tmp_path)
    assert ds.source == "official" and len(ds) == 10000


def test_available_checks_files_without_network(mnist_dir, tmp_path):
    assert MNIST.available(train=False, data_dir=mnist_dir.parent)
    assert not MNIST.available(train=True, data_dir=mnist_dir.parent)
    assert not MNIST.available(train=False, data_dir=tmp_path)


def test_bad_arguments_are_rejected(mnist_dir):
    with pytest.raises(ValueError, match="source must be one of"):
        MNIST(source="train-split", data_dir=mnist_dir.parent)
    with pytest.raises(ValueError, match="n_train"):
        MNIST(source="test-split", n_train=10000, data_dir=mnist_dir.parent)


# --------------------------------------------------------------------------- #
# The IDX parser
# --------------------------------------------------------------------------- #


def _idx(values, type_code=0x08):
    values = np.asarray(values, dtype=np.uint8)
    header = bytes([0, 0, type_code, values.ndim])
    header += b"".join(int(d).to_bytes(4, "big") for d in values.shape)
    return header + values.tobytes()


def test_load_idx_reads_a_small_file(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = tmp_path / "small-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(_idx(images)))
    out = load_idx(path)
    np.testing.assert_array_equal(out, images)
    out[0, 0, 0] = 7  # the result is an ordinary writable array
    plain = tmp_path / "labels-idx1-ubyte"
    plain.write_bytes(_idx([3, 1, 4]))
    assert load_idx(plain).tolist() == [3, 1, 4]


def test_load_idx_rejects_a_wrong_magic_number(tmp_path):
    path = tmp_path / "bad.gz"
    path.write_bytes(gzip.compress(b"\x1f\x00\x08\x01" + b"\x00\x00\x00\x01" + b"\x05"))
    with pytest.raises(IDXError, match="magic number 0x1f000801"):
        load_idx(path)


def test_load_idx_rejects_a_truncated_file(tmp_path):
    path = tmp_path / "short.gz"
    path.write_bytes(gzip.compress(_idx(np.zeros((10, 2, 2)))[:-3]))
    with pytest.raises(IDXError, match="truncated or corrupt"):
        load_idx(path)


def test_load_idx_rejects_a_file_that_is_not_gzip(tmp_path):
    path = tmp_path / "page.gz"
    path.write_bytes(b"<html>404 Not Found</html>")
    with pytest.raises(IDXError, match="not a valid gzip file.*delete it"):
        load_idx(path)


def test_load_idx_rejects_a_cut_gzip_stream(tmp_path, mnist_dir):
    path = tmp_path / TEST_LABELS
    path.write_bytes((mnist_dir / TEST_LABELS).read_bytes()[:2000])
    with pytest.raises(IDXError, match="not a valid gzip file"):
        load_idx(path)


# --------------------------------------------------------------------------- #
# Downloads from a local server
# --------------------------------------------------------------------------- #


class _Handler(http.server.BaseHTTPRequestHandler):
    """/good/NAME: the real file; /truncated/NAME: half of it; /corrupt/NAME: same size,
    flipped bytes; /cut/NAME: announces the full length, sends half, hangs up;
    /stall/NAME: sends half, then waits; anything else: 404."""

    files: dict = {}
    hits: list = []

    def do_GET(self):
        type(self).hits.append(self.path)
        parts = self.path.strip("/").split("/")
        if len(parts) != 2 or parts[1] not in self.files:
            self.send_error(404)
            return
        mode, body = parts[0], self.files[parts[1]]
        length = len(body)
        if mode == "truncated":
            body = body[: len(body) // 2]
            length = len(body)
        elif mode == "corrupt":
            body = bytes(b ^ 0xFF for b in body[:64]) + body[64:]
        elif mode in ("cut", "stall"):
            body = body[: len(body) // 2]
        elif mode != "good":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if mode == "stall":
            time.sleep(2)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(mnist_dir):
    _Handler.files = {name: (mnist_dir / name).read_bytes() for name in (TEST_IMAGES, TEST_LABELS)}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _md5(path):
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def _leftovers(directory):
    return sorted(p.name for p in Path(directory).iterdir())


def test_download_verifies_and_writes_the_file(server, tmp_path):
    name, md5, size = MNIST.FILES["test-labels"]
    out = datasets.download(f"{server}/good/{name}", tmp_path / name, md5=md5, size=size,
                            progress=False)
    assert out == tmp_path / name and _md5(out) == md5
    assert _leftovers(tmp_path) == [name]


@pytest.mark.parametrize("mode", ["truncated", "corrupt", "cut", "missing"])
def test_a_bad_download_leaves_no_file_behind(server, tmp_path, mode):
    name, md5, size = MNIST.FILES["test-labels"]
    with pytest.raises(OSError, match=f"could not download {name}") as info:
        datasets.download(f"{server}/{mode}/{name}", tmp_path / name, md5=md5, size=size,
                          progress=False)
    assert f"/{mode}/{name}" in str(info.value)
    assert _leftovers(tmp_path) == []  # no partial or temporary file survives


def test_a_stalled_download_times_out_and_leaves_nothing(server, tmp_path):
    name, md5, size = MNIST.FILES["test-labels"]
    with pytest.raises(OSError, match="timed out"):
        datasets.download(f"{server}/stall/{name}", tmp_path / name, md5=md5, size=size,
                          progress=False, timeout=0.5)
    assert _leftovers(tmp_path) == []


def test_mirrors_are_tried_in_turn(server, tmp_path):
    name, md5, size = MNIST.FILES["test-images"]
    urls = [f"{server}/missing/{name}", f"{server}/corrupt/{name}", f"{server}/good/{name}"]
    datasets.download(urls, tmp_path / name, md5=md5, size=size, progress=False)
    assert _md5(tmp_path / name) == md5 and _leftovers(tmp_path) == [name]


def test_a_failed_download_keeps_the_previous_file(server, tmp_path):
    name, md5, size = MNIST.FILES["test-labels"]
    target = tmp_path / name
    target.write_bytes(b"previous content")
    with pytest.raises(OSError, match=r"(?s)could not download .*truncated or wrong file"):
        datasets.download(f"{server}/truncated/{name}", target, md5=md5, size=size,
                          progress=False)
    assert target.read_bytes() == b"previous content"
    assert _leftovers(tmp_path) == [name]


def test_download_from_file_urls(tmp_path, mnist_dir):
    name, md5, size = MNIST.FILES["test-labels"]
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / name).write_bytes((mnist_dir / name).read_bytes()[:100])
    dest = tmp_path / "cache"
    datasets.download([(tmp_path / "cut" / name).as_uri(), (mnist_dir / name).as_uri()],
                      dest / name, md5=md5, size=size, progress=False)
    assert _leftovers(dest) == [name] and _md5(dest / name) == md5


def test_download_into_a_log_prints_one_line_and_no_redraws(tmp_path, mnist_dir, capsys):
    # stderr captured by pytest is neither a terminal nor a notebook, like a log file or a pipe:
    # a bar's carriage-return redraws would all stay in the text there
    name, md5, size = MNIST.FILES["test-labels"]
    url = (mnist_dir / name).as_uri()
    datasets.download(url, tmp_path / name, md5=md5, size=size)
    err = capsys.readouterr().err
    assert "\r" not in err, f"progress bar redraws written into a log: {err!r}"
    assert err == f"downloaded {name} ({size:,} bytes) from {url}\n"


def test_download_in_a_terminal_draws_the_bar(tmp_path, mnist_dir, monkeypatch):
    # a real pseudo-terminal: there the bar redraws its line, and leaves no extra line behind
    pty = pytest.importorskip("pty")
    import fcntl
    import os
    import struct
    import termios

    name, md5, size = MNIST.FILES["test-labels"]
    main_fd, terminal_fd = pty.openpty()
    # a new pseudo-terminal is 0 columns wide, where tqdm draws nothing: make it 80 x 24
    fcntl.ioctl(terminal_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    with os.fdopen(terminal_fd, "w") as terminal:
        monkeypatch.setattr("sys.stderr", terminal)
        datasets.download((mnist_dir / name).as_uri(), tmp_path / name, md5=md5, size=size)
        terminal.flush()
    shown = b""
    while True:
        try:
            chunk = os.read(main_fd, 1 << 16)
        except OSError:  # EIO: the terminal's side is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(main_fd)
    assert b"\r" in shown and name.encode() in shown, shown
    assert b"downloaded" not in shown


@pytest.mark.notebook
def test_download_in_a_notebook_draws_the_bar(tmp_path, mnist_dir):
    # a cell's output (ipykernel's stream) shows carriage returns as one changing line, as Colab
    # does: there the bar is drawn, not the line meant for logs
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    name, md5, size = MNIST.FILES["test-labels"]
    cell = (f"from dezero_like import datasets\n"
            f"datasets.download({(mnist_dir / name).as_uri()!r}, {str(tmp_path / name)!r}, "
            f"md5={md5!r}, size={size})")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    err = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.get("name") == "stderr")
    assert "\r" in err and name in err, err
    assert "downloaded" not in err


def test_mnist_downloads_into_its_cache_then_reads_offline(server, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    mirrors = [f"{server}/truncated/", f"{server}/good/"]
    _Handler.hits.clear()
    ds = MNIST(train=False, data_dir=tmp_path, mirrors=mirrors)
    assert len(ds) == 10000 and np.bincount(ds.label).tolist() == TEST_COUNTS
    assert _leftovers(tmp_path / "mnist") == sorted([TEST_IMAGES, TEST_LABELS])
    assert any("/good/" in h for h in _Handler.hits)
    # the progress bar went to stderr while downloading
    assert TEST_IMAGES in capsys.readouterr().err
    # a second load uses the cache: no request, works offline
    _Handler.hits.clear()
    monkeypatch.setenv("DEZERO_LIKE_OFFLINE", "1")
    assert len(MNIST(train=False, data_dir=tmp_path, mirrors=mirrors)) == 10000
    assert _Handler.hits == []


def test_a_corrupt_cached_file_is_downloaded_again(server, tmp_path, monkeypatch, mnist_dir):
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    root = tmp_path / "mnist"
    root.mkdir()
    (root / TEST_IMAGES).write_bytes((mnist_dir / TEST_IMAGES).read_bytes())
    (root / TEST_LABELS).write_bytes(b"garbage")
    ds = MNIST(train=False, data_dir=tmp_path, mirrors=[f"{server}/good/"], progress=False)
    assert len(ds) == 10000
    assert _md5(root / TEST_LABELS) == MNIST.FILES["test-labels"][1]


def test_a_corrupt_cached_file_offline_is_named_in_the_error(tmp_path, mnist_dir):
    root = tmp_path / "mnist"
    root.mkdir()
    (root / TEST_IMAGES).write_bytes((mnist_dir / TEST_IMAGES).read_bytes())
    (root / TEST_LABELS).write_bytes(b"garbage")
    with pytest.raises(MNISTUnavailableError, match="t10k-labels.*wrong size or MD5"):
        MNIST(train=False, data_dir=tmp_path)


def test_all_mirrors_failing_is_a_clear_error(server, tmp_path, monkeypatch):
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    with pytest.raises(MNISTUnavailableError) as info:
        MNIST(train=False, data_dir=tmp_path, progress=False,
              mirrors=[f"{server}/truncated/", f"{server}/corrupt/"])
    msg = str(info.value)
    assert "the download failed" in msg and "truncated" in msg and "MD5" in msg
    assert _leftovers(tmp_path / "mnist") == []


def test_the_same_failure_at_every_mirror_is_said_once(tmp_path, monkeypatch):
    """Offline, each file failed at each mirror with the same name-lookup error: six copies of
    it in one message. Two closed local ports stand in for two unreachable mirrors."""
    import socket

    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    ports = []
    for _ in range(2):  # ports that were free a moment ago: nothing listens there
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    with pytest.raises(MNISTUnavailableError) as info:
        MNIST(train=False, data_dir=tmp_path, progress=False,
              mirrors=[f"http://127.0.0.1:{port}/mnist/" for port in ports])
    msg = str(info.value)
    assert msg.count("refused") == 1, msg
    assert f"{TEST_IMAGES}, {TEST_LABELS}: each of the 2 mirrors (127.0.0.1:{ports[0]}, " in msg
    assert "same error" in msg and "network" in msg
    assert _leftovers(tmp_path / "mnist") == []


# --------------------------------------------------------------------------- #
# Real-data training
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_mlp_trained_on_8000_real_images_gets_90_percent_on_the_other_2000(mnist_dir):
    """An MLP (784-100-10, ReLU) after 3 epochs of SGD, on real MNIST digits only."""
    import dezero_like as dz
    import dezero_like.functions as F
    from dezero_like import DataLoader, optimizers
    from dezero_like.models import MLP

    train, test = datasets.mnist_train_test(data_dir=mnist_dir.parent)
    assert train.source == "test-split" and (len(train), len(test)) == (8000, 2000)
    np.random.seed(0)
    model = MLP((100, 10), activation=F.relu)
    optimizer = optimizers.SGD(lr=0.5).setup(model)
    loader = DataLoader(train, batch_size=100, seed=0)
    start = time.perf_counter()
    first_loss = None
    for _epoch in range(3):
        for x, t in loader:
            loss = F.softmax_cross_entropy(model(x), t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            first_loss = first_loss or float(loss.data)
    elapsed = time.perf_counter() - start
    correct = 0.0
    with dz.no_grad():
        for x, t in DataLoader(test, batch_size=500, shuffle=False):
            correct += float(F.accuracy(model(x), t).data) * len(t)
    acc = correct / len(test)
    print(f"test accuracy {acc:.4f} after {elapsed:.1f} s of training")
    assert float(loss.data) < first_loss / 3
    assert acc >= 0.90
