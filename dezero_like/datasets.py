"""Datasets: indexable collections of (input, label) examples.

A :class:`Dataset` holds arrays ``data`` and ``label`` (filled by ``prepare``)
and returns one example at a time, ``dataset[i] == (transform(data[i]),
target_transform(label[i]))``. A :class:`~dezero_like.dataloaders.DataLoader`
turns examples into mini-batches.

Two data sets come with the package:

* :class:`Spiral` (and :func:`get_spiral`): 300 points on three interleaved
  arms, generated from a fixed seed, for classifiers you can plot.
* :class:`MNIST`: 28x28 handwritten digits. The four official files are
  downloaded once (from a list of mirrors, tried in turn), checked against
  their published MD5 sums and cached under ``<data dir>/mnist/``. The data
  directory is the ``data_dir`` argument, else the environment variable
  ``DEZERO_LIKE_DATA``, else ``~/.dezero_like``. ``DEZERO_LIKE_OFFLINE=1``
  forbids downloads (tests and CI set it).

Offline, often only the 10,000 *test* images are at hand. ``MNIST(...,
source="test-split")`` then gives an honest stand-in: the first 8,000 test
images as a training split and the last 2,000 as the evaluation split.
:func:`mnist_train_test` picks the real training set when it is available and
falls back to that split otherwise, saying so in its ``note``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dezero_like import transforms as _T
from dezero_like._fixable import EXIT_CODE, FixableError

__all__ = [
    "Dataset", "Spiral", "get_spiral", "MNIST", "MNISTUnavailableError", "ChecksumError",
    "IDXError", "mnist_train_test", "load_idx", "download", "data_root", "downloads_allowed",
    "file_md5",
]

DATA_ENV = "DEZERO_LIKE_DATA"
OFFLINE_ENV = "DEZERO_LIKE_OFFLINE"
DEFAULT_DATA_DIR = "~/.dezero_like"


# --------------------------------------------------------------------------- #
# Dataset
# --------------------------------------------------------------------------- #


def _identity(x):
    return x


class Dataset:
    """Base class: ``len(ds)`` examples, ``ds[i]`` gives ``(x, t)``.

    Subclasses fill ``self.data`` (and ``self.label``, or leave it ``None`` for
    unlabelled data) in :meth:`prepare`. ``transform`` is applied to each input
    and ``target_transform`` to each label when an example is read, never to
    the stored arrays.
    """

    def __init__(self, train=True, transform=None, target_transform=None):
        self.train = train
        self.transform = _identity if transform is None else transform
        self.target_transform = _identity if target_transform is None else target_transform
        if not callable(self.transform) or not callable(self.target_transform):
            raise TypeError("transform and target_transform must be callables (or None)")
        self.data = None
        self.label = None
        self.prepare()

    def prepare(self):
        """Load or generate ``self.data`` and ``self.label`` (override this)."""

    def __getitem__(self, index):
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError(
                f"{type(self).__name__} is indexed one example at a time with an int, got "
                f"{type(index).__name__}; use a DataLoader to get mini-batches"
            )
        if self.data is None:
            raise RuntimeError(f"{type(self).__name__}.prepare() did not set self.data")
        x = self.transform(self.data[index])
        if self.label is None:
            return x, None
        return x, self.target_transform(self.label[index])

    def __len__(self):
        if self.data is None:
            return 0
        return len(self.data)

    def __repr__(self):
        return f"{type(self).__name__}(train={self.train}, examples={len(self)})"


# --------------------------------------------------------------------------- #
# Spiral
# --------------------------------------------------------------------------- #


def get_spiral(train=True, seed=None, num_data=100, num_class=3):
    """Points on ``num_class`` spiral arms, ``num_data`` per arm, and their class.

    Arm ``j`` at position ``r in [0, 1)`` sits at angle ``4 j + 4 r`` plus
    Gaussian noise (sd 0.2), at distance ``r`` from the origin. The points come
    shuffled. The result depends only on the seed: 1984 for the training set,
    2020 for the test set unless ``seed`` is given. The global NumPy random
    state is not touched. Returns ``x`` (N, 2) float32 and ``t`` (N,) int64.
    """
    if seed is None:
        seed = 1984 if train else 2020
    rng = np.random.default_rng(seed)
    rate = np.arange(num_data) / num_data
    xs, ts = [], []
    for j in range(num_class):
        theta = j * 4.0 + 4.0 * rate + rng.standard_normal(num_data) * 0.2
        xs.append(np.stack([rate * np.sin(theta), rate * np.cos(theta)], axis=1))
        ts.append(np.full(num_data, j, dtype=np.int64))
    x = np.concatenate(xs).astype(np.float32)
    t = np.concatenate(ts)
    order = rng.permutation(len(x))
    return x[order], t[order]


class Spiral(Dataset):
    """The spiral data set as a :class:`Dataset`: 300 points, 3 classes (see :func:`get_spiral`)."""

    def __init__(self, train=True, transform=None, target_transform=None, seed=None):
        self.seed = seed
        super().__init__(train, transform, target_transform)

    def prepare(self):
        self.data, self.label = get_spiral(self.train, self.seed)


# --------------------------------------------------------------------------- #
# Files: where they live, downloading, checksums, the IDX format
# --------------------------------------------------------------------------- #


class ChecksumError(ValueError):
    """A file's size or MD5 sum is not the published one."""


class IDXError(ValueError):
    """A file is not a valid (gzipped) IDX file."""


def data_root(data_dir=None):
    """The data directory: ``data_dir``, else ``$DEZERO_LIKE_DATA``, else ``~/.dezero_like``."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR
    return Path(data_dir).expanduser()


def downloads_allowed():
    """False when the environment variable ``DEZERO_LIKE_OFFLINE`` is set to 1/true/yes."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("1", "true", "yes", "on")


def file_md5(path):
    """The MD5 hex digest of a file, read in chunks."""
    import hashlib  # file helpers import their modules lazily: `import dezero_like` stays fast

    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def download(urls, path, md5=None, size=None, progress=True, timeout=30):
    """Download ``path`` from the first of ``urls`` that gives the right bytes.

    Each URL (``https://``, ``http://`` or ``file://``) is tried in turn. The
    bytes go to a temporary file in the destination directory; only when the
    size and MD5 sum match is it renamed to ``path`` (``os.replace`` is atomic),
    so an interrupted or corrupt download never leaves a file that looks
    valid. Shows a tqdm progress bar unless ``progress=False``. Raises
    ``OSError`` naming every URL and why it failed.
    """
    if isinstance(urls, (str, os.PathLike)):
        urls = [urls]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import http.client

    failures = []
    for url in urls:
        try:
            _fetch_verified(str(url), path, md5, size, progress, timeout)
            return path
        # URLError, HTTPError, timeouts, a cut connection (IncompleteRead), bad checksums
        except (OSError, ValueError, http.client.HTTPException) as e:
            failures.append(f"{url}: {type(e).__name__}: {e}")
    raise OSError(f"could not download {path.name}; tried:\n  " + "\n  ".join(failures))


_download = download  # MNIST's `download` argument shadows the function's name


def _fetch_verified(url, path, md5, size, progress, timeout):
    import hashlib
    import tempfile
    from urllib.request import urlopen  # imported here to keep `import dezero_like` fast

    from tqdm import tqdm

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        digest = hashlib.md5(usedforsecurity=False)
        received = 0
        with os.fdopen(fd, "wb") as out, urlopen(url, timeout=timeout) as response:
            total = size or int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                      desc=path.name, disable=not progress, leave=False) as bar:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    digest.update(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
        if size is not None and received != size:
            raise ChecksumError(
                f"received {received:,} bytes, expected {size:,} (truncated or wrong file)"
            )
        if md5 is not None and digest.hexdigest() != md5:
            raise ChecksumError(f"MD5 {digest.hexdigest()} does not match the published {md5}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def load_idx(path):
    """Read an IDX file (gzipped if its name ends in ``.gz``) into a NumPy array.

    Layout: two zero bytes, a type byte (0x08 = uint8), the number of
    dimensions, one big-endian uint32 per dimension, then the values. MNIST
    labels start with the magic number 0x00000801, images with 0x00000803.
    Raises :class:`IDXError` when the file is not gzip, has a wrong magic number
    or its length does not match its header.
    """
    import gzip
    import zlib

    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise IDXError(
            f"{path} is not a valid gzip file ({e}); delete it so that it is downloaded again"
        ) from None
    if len(raw) < 4:
        raise IDXError(f"{path} is too short to be an IDX file ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    zero, type_code, ndim = raw[0] | raw[1], raw[2], raw[3]
    if zero or type_code not in _IDX_TYPES or ndim == 0:
        raise IDXError(
            f"{path} has the magic number 0x{magic:08x}, which is not an IDX header "
            "(MNIST labels start with 0x00000801, images with 0x00000803)"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IDXError(f"{path} ends inside its header")
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[type_code])
    expected = header + int(np.prod(dims)) * dtype.itemsize
    if len(raw) != expected:
        raise IDXError(
            f"{path} holds {len(raw):,} bytes but its header {dims} needs {expected:,}; "
            "the file is truncated or corrupt"
        )
    data = np.frombuffer(bytearray(raw), dtype, offset=header).reshape(dims)
    return data.astype(dtype.newbyteorder("="), copy=False)


# --------------------------------------------------------------------------- #
# MNIST
# --------------------------------------------------------------------------- #


DATA_EXIT_CODE = EXIT_CODE  # exit status of a script stopped by MNISTUnavailableError


class MNISTUnavailableError(FixableError, FileNotFoundError):
    """The MNIST files needed are neither cached nor downloadable.

    ``reason`` is a short phrase (e.g. "downloads are disabled by
    DEZERO_LIKE_OFFLINE=1"); the message is one paragraph that says what is
    missing, where it looked and how to fix it. Uncaught, it shows that
    paragraph without a traceback (see ``dezero_like._fixable``).
    """

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


_DEFAULT = object()


class MNIST(Dataset):
    """Handwritten digits, 28x28 pixels: 60,000 training and 10,000 test images.

    ``MNIST(train=True)`` is the official training set, ``MNIST(train=False)``
    the test set. Missing files are downloaded into ``<data dir>/mnist/`` (see
    :func:`data_root`) unless downloads are off (``download=False`` or
    ``DEZERO_LIKE_OFFLINE=1``); then a :class:`MNISTUnavailableError` names the
    missing files, the directory and the variables to set.

    ``source="test-split"`` uses only the 10,000 test images: ``train=True``
    gives the first ``n_train`` (8,000), ``train=False`` the rest (2,000). Use
    it when the training images are not available offline, and say so.

    ``data`` has shape (N, 1, 28, 28), uint8; ``label`` (N,), int64. The
    default transform flattens each image to 784 float32 values in [0, 1];
    ``transform=None`` returns the raw uint8 image.
    """

    FILES = {
        "train-images": ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873", 9912422),
        "train-labels": ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432", 28881),
        "test-images": ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3", 1648877),
        "test-labels": ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c", 4542),
    }
    # Tried in order; the original site at yann.lecun.com often refuses downloads now.
    MIRRORS = (
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    )
    SOURCES = ("official", "test-split")

    def __init__(self, train=True, transform=_DEFAULT, target_transform=None, data_dir=None,
                 source="official", n_train=8000, download=None, mirrors=None, progress=True):
        if source not in self.SOURCES:
            raise ValueError(f"source must be one of {self.SOURCES}, got {source!r}")
        if not 0 < n_train < 10000:
            raise ValueError(f"n_train must be between 1 and 9,999 test images, got {n_train}")
        if transform is _DEFAULT:
            transform = _T.Compose([_T.Flatten(), _T.ToFloat(), _T.Normalize(0.0, 255.0)])
        self.source = source
        self.n_train = n_train
        self.root = data_root(data_dir) / "mnist"
        self.download = download
        self.mirrors = tuple(self.MIRRORS if mirrors is None else mirrors)
        self.progress = progress
        super().__init__(train, transform, target_transform)

    @property
    def note(self):
        """One sentence saying which images this split holds."""
        if self.source == "official":
            part = "training" if self.train else "test"
            return f"MNIST {part} set: {len(self):,} images from {self.root}"
        if self.train:
            return (f"training split: the first {self.n_train:,} of the 10,000 MNIST test images "
                    f"(from {self.root})")
        return (f"evaluation split: the last {10000 - self.n_train:,} of the 10,000 MNIST test "
                f"images (from {self.root})")

    def _keys(self):
        if self.source == "official" and self.train:
            return "train-images", "train-labels"
        return "test-images", "test-labels"

    def prepare(self):
        image_key, label_key = self._keys()
        paths = self.ensure_files((image_key, label_key), self.root, download=self.download,
                                  mirrors=self.mirrors, progress=self.progress)
        images = load_idx(paths[0])
        labels = load_idx(paths[1])
        if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.ndim != 1:
            raise IDXError(f"unexpected MNIST shapes: images {images.shape}, labels {labels.shape}")
        if len(images) != len(labels):
            raise IDXError(f"{len(images)} images but {len(labels)} labels in {self.root}")
        images = images.reshape(-1, 1, 28, 28)
        labels = labels.astype(np.int64)
        if self.source == "test-split":
            part = slice(None, self.n_train) if self.train else slice(self.n_train, None)
            images, labels = images[part], labels[part]
        self.data, self.label = images, labels

    # ---- files ------------------------------------------------------------------
    @classmethod
    def available(cls, train=True, data_dir=None):
        """True when the files of a split are cached and intact (no network used)."""
        keys = ("train-images", "train-labels") if train else ("test-images", "test-labels")
        root = data_root(data_dir) / "mnist"
        for key in keys:
            name, md5, size = cls.FILES[key]
            path = root / name
            if not path.is_file() or path.stat().st_size != size or file_md5(path) != md5:
                return False
        return True

    @classmethod
    def ensure_files(cls, keys, root, download=None, mirrors=None, progress=True):
        """Paths of the files ``keys`` in ``root``: verified, downloaded if missing and allowed.

        A cached file whose size or MD5 is wrong counts as missing.
        """
        root = Path(root)
        mirrors = tuple(cls.MIRRORS if mirrors is None else mirrors)
        wanted = {key: cls.FILES[key] for key in keys}
        missing, bad = [], []
        for _key, (name, md5, size) in wanted.items():
            path = root / name
            if not path.is_file():
                missing.append(name)
            elif path.stat().st_size != size or file_md5(path) != md5:
                bad.append(name)
        todo = missing + bad
        if todo:
            reason = cls._why_no_download(root, download)
            if reason is None:
                failures = []
                for name in todo:
                    _, md5, size = next(v for v in wanted.values() if v[0] == name)
                    try:
                        _download([m.rstrip("/") + "/" + name for m in mirrors], root / name,
                                 md5=md5, size=size, progress=progress)
                    except OSError as e:
                        failures.append(str(e))
                if failures:
                    reason = "the download failed"
                    cls._raise_unavailable(root, todo, bad, reason, "\n".join(failures))
            else:
                cls._raise_unavailable(root, todo, bad, reason)
        return [root / wanted[key][0] for key in keys]

    @staticmethod
    def _why_no_download(root, download):
        """None when a download may be tried, else a short reason why not."""
        if not downloads_allowed():
            return f"downloads are disabled by {OFFLINE_ENV}=1"
        if download is False:
            return "downloads are disabled (download=False)"
        existing = root
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not os.access(existing, os.W_OK):
            return f"the cache directory {root} is not writable"
        return None

    @classmethod
    def _raise_unavailable(cls, root, todo, bad, reason, details=""):
        lines = [f"MNIST files are not available: {', '.join(todo)} "
                 f"{'is' if len(todo) == 1 else 'are'} missing from {root}"]
        if bad:
            lines.append(f"({', '.join(bad)}: wrong size or MD5 sum, so not used)")
        lines.append(f"and {reason}.")
        if details:
            lines.append("(" + details.replace("\n", "; ") + ")")
        lines.append(
            f"To fix: allow a download (unset {OFFLINE_ENV}, keep a network connection), or "
            f"put the files in {root}, or set {DATA_ENV} to a directory that holds "
            "mnist/ with them (or pass data_dir=...). Offline with only the test images, "
            "use MNIST(train=..., source='test-split')."
        )
        raise MNISTUnavailableError(" ".join(lines), reason=reason)


def mnist_train_test(data_dir=None, transform=_DEFAULT, target_transform=None, n_train=8000,
                     download=None, progress=True):
    """``(train_set, test_set)``: the real MNIST split if possible, else the test-image split.

    With the official training files cached (or downloadable) this is
    ``MNIST(train=True)`` and ``MNIST(train=False)``. Otherwise the first
    ``n_train`` test images train and the rest evaluate (``source="test-split"``).
    ``train_set.summary`` says which, and why, in one sentence to print;
    ``train_set.fallback_reason`` is None for the real training set.
    """
    kwargs = dict(transform=transform, target_transform=target_transform, data_dir=data_dir,
                  download=download, progress=progress)
    try:
        train = MNIST(train=True, **kwargs)
    except MNISTUnavailableError as e:
        try:
            train = MNIST(train=True, source="test-split", n_train=n_train, **kwargs)
            test = MNIST(train=False, source="test-split", n_train=n_train, **kwargs)
        except MNISTUnavailableError as none_at_all:
            # neither split: one error that names every missing file (no chained traceback)
            root = data_root(data_dir) / "mnist"
            todo = [name for name, _, _ in MNIST.FILES.values() if not (root / name).exists()]
            try:
                MNIST._raise_unavailable(root, todo, [], none_at_all.reason)
            except MNISTUnavailableError as combined:
                raise combined from None
        train.fallback_reason = e.reason
        train.summary = (
            f"training on {n_train:,} of the 10,000 MNIST test images because the training set "
            f"is not available offline ({e.reason}); evaluating on the other {10000 - n_train:,}"
        )
        return train, test
    test = MNIST(train=False, **kwargs)
    train.fallback_reason = None
    train.summary = (f"training on the {len(train):,} MNIST training images; "
                     f"evaluating on the {len(test):,} test images")
    return train, test


# Time-series data (step 61) lives in datasets_seq.
from dezero_like.datasets_seq import SinCurve  # noqa: E402, F401
