# %% [markdown]
# # Step 53: MNIST: download, cache, verify, and train an MLP
#
# Time for real data. MNIST is 70,000 scanned images of handwritten digits,
# 28×28 grey pixels each, with the digit as label: 60,000 for training and
# 10,000 for testing. It is small enough to train on a laptop and real enough
# that the numbers mean something.
#
# Getting a data set onto a machine sounds trivial and is where many course
# notebooks break years later. This step shows the three things that make it
# reliable, all done by `dz.datasets.MNIST`:
#
# 1. **Mirrors.** The files are published in several places, and any one of
#    them may disappear or start refusing downloads. The package keeps a list
#    and tries each in turn.
# 2. **Verification.** Every file has a known size (from the MNIST page) and an
#    MD5 checksum (the values other loaders, such as torchvision's, pin). A
#    download that was cut short, an HTML error page saved under the file's
#    name, or a mirror serving something else is rejected, not parsed into
#    garbage.
# 3. **Atomic caching.** Bytes are written to a temporary file in the cache
#    directory and only renamed to the real name once verified
#    (`os.replace` is atomic). An interrupted download therefore never leaves
#    a half-file that a later run would trust.

# %% [markdown]
# ### The package code of this step
#
# In this step `datasets` gains `DATA_ENV`, `OFFLINE_ENV`, `DEFAULT_DATA_DIR`,
# `ChecksumError`, `IDXError`, `data_root`, `downloads_allowed`, `file_md5`, `download`,
# `load_idx`, `MNISTUnavailableError`, `MNIST`, `mnist_train_test`, and `utils` gains `publish`.
#
# A cell whose first line is `#| export dezero_like/...` is an **export cell**: it is part of
# the package. `python tools/export.py write` copies these cells, step by step, into the
# modules of `dezero_like` (a later step that writes the same name replaces it), so what you
# read here is exactly what the package contains (docs/package-from-steps.md). Running a cell
# defines its names in this script too; the rest of the step uses them through the package.

# %% [markdown]
# The names of the environment variables and the default directory are constants, so the code
# and its error messages use the same spelling.

# %%
#| export dezero_like/datasets.py
DATA_ENV = "DEZERO_LIKE_DATA"


OFFLINE_ENV = "DEZERO_LIKE_OFFLINE"


DEFAULT_DATA_DIR = "~/.dezero_like"


# %% [markdown]
# Two exception classes name the two ways a file can be bad: wrong bytes (`ChecksumError`) or not
# an IDX file (`IDXError`). Both are `ValueError`s, so code that catches `ValueError` still works.

# %%
#| export dezero_like/datasets.py
class ChecksumError(ValueError):
    """A file's size or MD5 sum is not the published one."""


# %%
#| export dezero_like/datasets.py
class IDXError(ValueError):
    """A file is not a valid (gzipped) IDX file."""


# %% [markdown]
# `data_root` picks the data directory in a fixed order: the argument, the environment variable,
# the default. `downloads_allowed` reads the offline switch; several spellings of "yes" count.

# %%
#| export dezero_like/datasets.py
import os
from pathlib import Path


def data_root(data_dir=None):
    """The data directory: ``data_dir``, else ``$DEZERO_LIKE_DATA``, else ``~/.dezero_like``."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR
    return Path(data_dir).expanduser()


def downloads_allowed():
    """False when the environment variable ``DEZERO_LIKE_OFFLINE`` is set to 1/true/yes."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("1", "true", "yes", "on")


# %% [markdown]
# `file_md5` reads a file in 1 MiB chunks, so a large file is never held in memory at once.
# `usedforsecurity=False` says the hash checks integrity only.

# %%
#| export dezero_like/datasets.py
def file_md5(path):
    """The MD5 hex digest of a file, read in chunks."""
    import hashlib  # file helpers import their modules lazily: `import dezero_like` stays fast

    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# %% [markdown]
# `download` tries each URL in turn and returns at the first that gives the right bytes; every
# failure is recorded, and the final `OSError` lists them all. `_download` is a second name for it,
# because `MNIST` has an argument called `download`.

# %%
#| export dezero_like/datasets.py
import os
from pathlib import Path


def download(urls, path, md5=None, size=None, progress=True, timeout=30):
    """Download ``path`` from the first of ``urls`` that gives the right bytes.

    Each URL (``https://``, ``http://`` or ``file://``) is tried in turn. The
    bytes go to a temporary file in the destination directory; only when the
    size and MD5 sum match is it renamed to ``path`` (``os.replace`` is atomic),
    so an interrupted or corrupt download never leaves a file that looks
    valid. Shows a tqdm progress bar unless ``progress=False`` (where stderr is
    not a terminal or a notebook, one line per downloaded file instead). Raises
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
            failures.append((str(url), f"{type(e).__name__}: {e}"))
    error = OSError(f"could not download {path.name}; tried:\n  "
                    + "\n  ".join(f"{url}: {why}" for url, why in failures))
    error.failures = failures  # (url, why) pairs, for a caller that sums up several downloads
    raise error


# %%
#| export dezero_like/datasets.py
_download = download  # MNIST's `download` argument shadows the function's name


# %% [markdown]
# `_fetch_verified` does one attempt. It writes into a temporary file in the target directory,
# hashes the bytes as they arrive, and renames the file to its real name only after the size and
# the MD5 sum match; `finally` removes the temporary file in every other case. A half-finished
# download therefore never appears under the real name.
#
# The progress bar redraws its line with carriage returns, which only a terminal or a notebook's
# output shows as one changing line. Where stderr is a log file or a pipe (`python
# steps/step53.py > log 2>&1`, a CI job), every redraw would stay in the text, so there the bar
# is off and one line is printed once the file is verified.

# %% [markdown]
# `tempfile.mkstemp` makes its file readable by its owner only (mode 0600), where `open` would
# give the usual mode (0644 with the common umask 022). `publish` gives the finished temporary
# file that usual mode, or the permissions of the regular file it replaces (a private 0600 file
# stays private), where the file system has modes, and renames it over the real name;
# `save_weights` (step 55) uses it too.

# %%
#| export dezero_like/utils.py
import os
import stat


def _umask():
    """The process's umask, read without changing it where Linux shows it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)  # elsewhere the only way to read it is to set it, for a moment
    os.umask(umask)
    return umask


def publish(tmp, path):
    """Rename the finished temporary file ``tmp`` to ``path``.

    The file keeps the mode of the one it replaces (a private 0600 file stays private),
    and a new file gets the usual mode.
    """
    try:
        old = os.stat(path)
    except OSError:  # no file there yet
        old = None
    # only a regular file's permission bits are kept (never setuid/setgid/sticky, nor a device's)
    mode = old.st_mode & 0o777 if old and stat.S_ISREG(old.st_mode) else 0o666 & ~_umask()
    try:
        os.chmod(tmp, mode)
    except OSError:  # a file system without POSIX modes (FAT, some network drives)
        pass
    os.replace(tmp, path)


# %%
#| export dezero_like/datasets.py
import os

from dezero_like.utils import publish


def _redraws_in_place(stream):
    """True when ``stream`` shows a carriage return as "back to the start of the line": a
    terminal, or the output of a Jupyter (or Colab) cell, an ipykernel ``OutStream``."""
    import sys

    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return True
    iostream = sys.modules.get("ipykernel.iostream")  # imported only inside a kernel
    return iostream is not None and isinstance(stream, iostream.OutStream)


def _fetch_verified(url, path, md5, size, progress, timeout):
    import hashlib
    import sys
    import tempfile
    from urllib.request import urlopen  # imported here to keep `import dezero_like` fast

    from tqdm import tqdm

    bar_shown = progress and _redraws_in_place(sys.stderr)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        digest = hashlib.md5(usedforsecurity=False)
        received = 0
        with os.fdopen(fd, "wb") as out, urlopen(url, timeout=timeout) as response:
            total = size or int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                      desc=path.name, disable=not bar_shown, leave=False) as bar:
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
        publish(tmp, path)
        if progress and not bar_shown:  # a log or a pipe: one line instead of the bar's redraws
            print(f"downloaded {path.name} ({received:,} bytes) from {url}", file=sys.stderr)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# %% [markdown]
# `_IDX_TYPES` maps the type byte of an IDX header to a dtype; the multi-byte types are big-endian
# (`>`), as the format stores them.

# %%
#| export dezero_like/datasets.py
import numpy as np


_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


# %% [markdown]
# `load_idx` reads the header (magic number, dimensions) and checks that the file's length is
# exactly what the header announces, so a truncated file is an error with a message, not a
# wrong shape. `np.frombuffer` reads the values without a loop, and the last line converts them
# to the machine's byte order.

# %%
#| export dezero_like/datasets.py
from pathlib import Path
import numpy as np


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


# %% [markdown]
# `MNISTUnavailableError` is both a `FixableError` (shown as one paragraph, without a traceback)
# and a `FileNotFoundError`; `reason` keeps the short phrase and `details` what each download
# attempt said, so `mnist_train_test` can reuse both.

# %%
#| export dezero_like/datasets.py
from dezero_like._fixable import FixableError


class MNISTUnavailableError(FixableError, FileNotFoundError):
    """The MNIST files needed are neither cached nor downloadable.

    ``reason`` is a short phrase (e.g. "downloads are disabled by
    DEZERO_LIKE_OFFLINE=1"); the message is one paragraph that says what is
    missing, where it looked and how to fix it. Uncaught, it shows that
    paragraph without a traceback (see ``dezero_like._fixable``). ``details``
    keeps the failed download attempts, if any, in words; ``downloads`` as ``(file name,
    error)`` pairs.
    """

    def __init__(self, message, reason="", details="", downloads=()):
        super().__init__(message)
        self.reason = reason
        self.details = details
        self.downloads = list(downloads)


# %% [markdown]
# `_DEFAULT` is a unique marker: it lets `MNIST` tell "no `transform` argument" (use the default
# pipeline) apart from `transform=None` (no transform at all).

# %%
#| export dezero_like/datasets.py
_DEFAULT = object()


# %% [markdown]
# `MNIST` is a Dataset whose `prepare` makes sure the two files are there (`ensure_files`), loads
# them, checks their shapes and, for `source="test-split"`, keeps one part of the test images.
# Its arguments are checked first: `n_train` must be a whole number of test images, `download`
# None, True or False.
#
# `_check_files` sorts the files into missing ones and damaged ones (wrong size or MD5 sum).
# `ensure_files` downloads both kinds when it may; a file it could not get leads to an error that
# names only the files still missing or damaged, the directory, the reason and the fixes that can
# work: it suggests `source="test-split"` only when the test files are intact, and it notices two
# slips with the data folder: a path that is a file, not a folder, and `DEZERO_LIKE_DATA` naming
# the `mnist` folder itself instead of the folder that holds it. `available` answers the same
# question without any network access.

# %%
#| export dezero_like/datasets.py
import os
from pathlib import Path
import numpy as np
from dezero_like import transforms as _T
from dezero_like.datasets import Dataset, _flag


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
        _check_n_train(n_train)
        download = _flag("download", download, none=True)  # np.False_ must act as False
        if transform is _DEFAULT:
            transform = _T.Compose([_T.Flatten(), _T.ToFloat(), _T.Normalize(0.0, 255.0)])
        self.source = source
        self.n_train = int(n_train)
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
        keys = (("train-images", "train-labels") if _flag("train", train)
                else ("test-images", "test-labels"))
        missing, bad = cls._check_files(keys, data_root(data_dir) / "mnist")
        return not missing and not bad

    @classmethod
    def _check_files(cls, keys, root):
        """``(missing, bad)``: the names of the files ``keys`` that ``root`` lacks, or holds with
        the wrong size or MD5 sum."""
        missing, bad = [], []
        for key in keys:
            name, md5, size = cls.FILES[key]
            path = Path(root) / name
            if not path.is_file():
                missing.append(name)
            elif path.stat().st_size != size or file_md5(path) != md5:
                bad.append(name)
        return missing, bad

    @classmethod
    def ensure_files(cls, keys, root, download=None, mirrors=None, progress=True):
        """Paths of the files ``keys`` in ``root``: verified, downloaded if missing and allowed.

        A cached file whose size or MD5 is wrong counts as missing. The error, when some
        cannot be had, names only the files still missing or damaged.
        """
        root = Path(root)
        mirrors = tuple(cls.MIRRORS if mirrors is None else mirrors)
        missing, bad = cls._check_files(keys, root)
        if missing or bad:
            reason = cls._why_no_download(root, download)
            if reason is not None:
                cls._raise_unavailable(root, missing, bad, reason)
            sums = {cls.FILES[key][0]: cls.FILES[key][1:] for key in keys}
            failed, errors = [], []
            for name in missing + bad:
                md5, size = sums[name]
                try:
                    _download([m.rstrip("/") + "/" + name for m in mirrors], root / name,
                              md5=md5, size=size, progress=progress)
                except OSError as e:
                    failed.append(name)
                    errors.append(e)
            if failed:  # a bad file whose download failed is still there, still bad
                cls._raise_unavailable(root, [n for n in missing if n in failed],
                                       [n for n in bad if n in failed], "the download failed",
                                       downloads=zip(failed, errors), mirrors=mirrors)
        return [root / cls.FILES[key][0] for key in keys]

    @staticmethod
    def _why_no_download(root, download):
        """None when a download may be tried, else a short reason why not."""
        if not downloads_allowed():
            return f"downloads are disabled by {OFFLINE_ENV}=1"
        if download is False:
            return "downloads are disabled (download=False)"
        existing = _existing_ancestor(root)
        if not existing.is_dir():
            return f"{existing} is a file, not a folder"
        if not os.access(existing, os.W_OK):
            return f"the cache directory {root} is not writable"
        return None

    @classmethod
    def _raise_unavailable(cls, root, missing, bad, reason, downloads=(), mirrors=None):
        """Raise the one-paragraph error: what is wrong in ``root``, why, and what will fix it.
        ``downloads``: the ``(file name, error)`` of each failed download, from ``mirrors``."""
        downloads = list(downloads)
        details = _download_failures(  # the failed downloads, in words (or none)
            [name for name, _ in downloads], [error for _, error in downloads],
            cls.MIRRORS if mirrors is None else mirrors) if downloads else ""
        existing = _existing_ancestor(root)
        if not existing.is_dir():  # no file can be put in root, nor downloaded there
            move = f"move the file {root} out of the way, or " if existing == root else ""
            raise MNISTUnavailableError(
                f"MNIST files are not available: {existing} is a file, not a folder, so the "
                f"files cannot be in {root}. To fix: {move}set {DATA_ENV} (or pass "
                "data_dir=...) to a folder; the MNIST files go in its subfolder mnist/.",
                reason=f"{existing} is a file, not a folder")
        problems = []
        if missing:
            problems.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                            "missing")
        if bad:
            one = len(bad) == 1
            problems.append(f"{', '.join(bad)} {'has' if one else 'have'} the wrong size or MD5 "
                            f"sum (damaged, or another file), so {'it is' if one else 'they are'}"
                            " not used")
        lines = [f"MNIST files are not available in {root}: {'; '.join(problems)}"
                 f"{'; and' if len(problems) > 1 else ', and'} {reason}."]
        if details:
            parts = [part.strip() for part in details.splitlines() if part.strip()]
            lines.append("(" + "; ".join(parts).replace(":;", ":") + ")")
        fixes = []
        nested = [name for name in missing if (root.parent / name).is_file()]
        if nested:  # DEZERO_LIKE_DATA names the mnist folder itself, not the folder holding it
            lines.append(f"{', '.join(nested)} {'is' if len(nested) == 1 else 'are'} in "
                         f"{root.parent} itself, one level up: the data folder ({DATA_ENV} or "
                         "data_dir) is the folder that holds mnist/, not mnist/ itself.")
            fixes.append(f"set {DATA_ENV} (or data_dir=...) to the parent folder, "
                         f"{root.parent.parent}")
        if reason == "the download failed":  # allowed, tried, and no mirror answered
            allow = ("connect this machine to the network (behind a proxy, set HTTPS_PROXY) and "
                     "run again")
        elif OFFLINE_ENV in reason:
            allow = f"allow a download (unset {OFFLINE_ENV}, keep a network connection)"
        else:
            allow = "allow a download (download=True, a writable folder, a network connection)"
        fixes.append(allow + (", which replaces damaged files" if bad else ""))
        fixes.append(f"put {'intact copies of ' if bad else ''}the files in {root}")
        fixes.append(f"set {DATA_ENV} to a directory that holds mnist/ with them (or pass "
                     "data_dir=...)")
        lines.append("To fix: " + ", or ".join(fixes) + ".")
        test_files = ("test-images", "test-labels")
        if not any(cls._check_files(test_files, root)):  # a fix that works: the test images
            lines.append("Offline with only the test images, use "
                         "MNIST(train=..., source='test-split').")
        raise MNISTUnavailableError(" ".join(lines), reason=reason, details=details,
                                    downloads=downloads)


def _download_failures(names, errors, mirrors):
    """The ``details`` of a failed MNIST download: each file's tries, or, when every mirror
    failed for every file in the same way, that one reason once (a DNS error six times over
    says no more than once, and it points at this machine's network, not at a mirror)."""
    tries = [getattr(e, "failures", None) for e in errors]
    reasons = {why for pairs in tries if pairs for _, why in pairs}
    if len(reasons) != 1 or not all(tries):
        return "\n".join(str(e) for e in errors)
    from urllib.parse import urlsplit

    hosts = ", ".join(urlsplit(m).netloc or m for m in mirrors)
    return (f"could not download {', '.join(names)}: each of the {len(mirrors)} "
            f"{'mirror' if len(mirrors) == 1 else 'mirrors'} ({hosts}) failed with the same "
            f"error, {reasons.pop()}, which points at this machine's network connection, "
            "proxy or name lookup rather than at a mirror")


def _existing_ancestor(path):
    """``path`` itself if it exists, else its nearest parent folder (or file) that does."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_n_train(n_train):
    """Refuse an ``n_train`` that is not a whole number of test images between 1 and 9,999."""
    if isinstance(n_train, bool) or not isinstance(n_train, (int, np.integer)):
        raise TypeError(f"n_train must be an int (a number of test images), got {n_train!r} "
                        f"({type(n_train).__name__})")
    if not 0 < n_train < 10000:
        raise ValueError(f"n_train must be between 1 and 9,999 test images, got {n_train}")


# %% [markdown]
# `mnist_train_test` tries the official training set first and falls back to the test-image split
# when it is unavailable; `summary` says which happened, and `fallback_reason` why. When the test
# images cannot be used either, it raises one error that names every file missing or damaged,
# checked again at that moment (a download may have brought some), and that does not suggest the
# test-image split, which has just failed. `n_train` is checked first, whichever split is used.

# %%
#| export dezero_like/datasets.py
def mnist_train_test(data_dir=None, transform=_DEFAULT, target_transform=None, n_train=8000,
                     download=None, progress=True):
    """``(train_set, test_set)``: the real MNIST split if possible, else the test-image split.

    With the official training files cached (or downloadable) this is
    ``MNIST(train=True)`` and ``MNIST(train=False)``. Otherwise the first
    ``n_train`` test images train and the rest evaluate (``source="test-split"``).
    ``train_set.summary`` says which, and why, in one sentence to print;
    ``train_set.fallback_reason`` is None for the real training set.
    """
    _check_n_train(n_train)  # now, not only when the fallback needs it
    kwargs = dict(transform=transform, target_transform=target_transform, data_dir=data_dir,
                  download=download, progress=progress)
    try:
        train = MNIST(train=True, **kwargs)
    except MNISTUnavailableError as e:
        try:
            train = MNIST(train=True, source="test-split", n_train=n_train, **kwargs)
            test = MNIST(train=False, source="test-split", n_train=n_train, **kwargs)
        except MNISTUnavailableError as none_at_all:
            # neither split: one error that names every file missing or damaged, as they are
            # now (no chained traceback); it does not offer the split that just failed
            root = data_root(data_dir) / "mnist"
            missing, bad = MNIST._check_files(MNIST.FILES, root)
            if not missing and not bad:  # the files came meanwhile: that split's own error
                raise
            try:  # with both splits' failed downloads
                MNIST._raise_unavailable(root, missing, bad, none_at_all.reason,
                                         downloads=e.downloads + none_at_all.downloads)
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


# %%
import hashlib
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import dezero_like as dz
import dezero_like.functions as F
from dezero_like import DataLoader, datasets, optimizers
from dezero_like.models import MLP
from dezero_like.plot import output_dir, plot_curves, save_figure

out_dir = output_dir(53)  # every file this step writes goes here

# %% [markdown]
# ## Where the files live
#
# The cache is `<data dir>/mnist/`. The data directory is, in order of
# preference, the `data_dir=` argument, the environment variable
# `DEZERO_LIKE_DATA`, or `~/.dezero_like`. Setting `DEZERO_LIKE_OFFLINE=1`
# forbids any download (the tests and CI do this). These are the four files and
# their published checksums:

# %%
print("data directory:", datasets.data_root())
print("downloads allowed:", datasets.downloads_allowed())
for key, (name, md5, size) in datasets.MNIST.FILES.items():
    print(f"{key:13s} {name:28s} {size:>10,} bytes  md5 {md5}")

# %% [markdown]
# ## Verification in action
#
# `datasets.download(urls, path, md5=..., size=...)` is the function the
# dataset uses. To watch it refuse bad data without touching the internet we
# serve files from a temporary folder with `file://` URLs: a "mirror" whose copy
# is truncated, and one whose copy is intact.

# %%
payload = b"pretend these are the bytes of a data file\n" * 100
payload_md5 = hashlib.md5(payload).hexdigest()  # what a publisher prints next to the file

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    (tmp / "bad").mkdir()
    (tmp / "good").mkdir()
    (tmp / "bad" / "data.bin").write_bytes(payload[:1000])  # cut short
    (tmp / "good" / "data.bin").write_bytes(payload)
    cache = tmp / "cache"
    try:
        datasets.download((tmp / "bad" / "data.bin").as_uri(), cache / "data.bin",
                          md5=payload_md5, size=len(payload), progress=False)
    except OSError as e:
        print("demo, a truncated mirror is rejected (as intended):", e)
    print("files in the cache after the failure:", sorted(p.name for p in cache.iterdir()))
    urls = [(tmp / m / "data.bin").as_uri() for m in ("bad", "good")]
    datasets.download(urls, cache / "data.bin", md5=payload_md5, size=len(payload),
                      progress=False)
    print("after trying both mirrors:", sorted(p.name for p in cache.iterdir()))

# %% [markdown]
# ## Loading MNIST
#
# The files use the simple IDX format: a 4-byte magic number (`0x00000803` for
# images, `0x00000801` for labels), one 4-byte size per dimension, then the raw
# bytes. `datasets.load_idx` checks the magic number and that the length
# matches the header, so a damaged file gives a clear error.
#
# `dz.datasets.mnist_train_test()` returns a training and a test set. With the
# real training images in the cache (or downloadable) those are the official
# 60,000/10,000 split. Offline, where often only the 10,000 **test** images are
# available (as in this project's CI), it trains on the first 8,000 test
# images and evaluates on the other 2,000, and says so: a model trained that
# way is still evaluated on digits it never saw, but the numbers are not the
# official benchmark.

# %%
train_set, test_set = dz.datasets.mnist_train_test()
print(train_set.summary)
print("train:", len(train_set), " test:", len(test_set))
x, t = train_set[0]
print("one example:", x.shape, x.dtype, f"values in [{x.min()}, {x.max()}], label {t}")
print("stored as:", train_set.data.shape, train_set.data.dtype)

# %% [markdown]
# The default transform, built from step 51's transforms, flattens each image and scales it to
# $[0, 1]$ in float32; the stored data stays uint8. A look at some digits:

# %%
fig, axes = plt.subplots(2, 8, figsize=(8, 2.4))
for ax, i in zip(axes.ravel(), range(16)):
    ax.imshow(train_set.data[i, 0], cmap="gray_r")
    ax.set_title(str(train_set.label[i]), fontsize=9)
    ax.axis("off")
save_figure(fig, out_dir / "first_digits.png")
plt.show()

# %% [markdown]
# ## Training an MLP
#
# The model is a multilayer perceptron 784 → 100 → 10 with ReLU,
# $\mathrm{relu}(x) = \max(0, x)$, between the layers, trained with plain SGD
# on mini-batches of 100 and the softmax cross entropy loss of step 49. Three
# epochs are enough to see a real result. Bigger MLPs trained longer do
# better: LeCun's MNIST page lists a 784-800-10 network at 1.6% test error
# (Simard, Steinkraus and Platt, 2003, "Best Practices for Convolutional Neural
# Networks Applied to Visual Document Analysis"), i.e. 98.4% accuracy.

# %%
np.random.seed(0)
max_epoch, batch_size = 3, 100
train_loader = DataLoader(train_set, batch_size)
test_loader = DataLoader(test_set, batch_size, shuffle=False)
model = MLP((100, 10), activation=F.relu)
optimizer = optimizers.SGD(lr=0.5).setup(model)


def evaluate(model, loader):
    """Mean loss and accuracy over every example of the loader, without a graph."""
    sum_loss = sum_acc = 0.0
    with dz.no_grad():
        for x, t in loader:
            y = model(x)
            sum_loss += float(F.softmax_cross_entropy(y, t).data) * len(t)
            sum_acc += float(F.accuracy(y, t).data) * len(t)
    n = len(loader.dataset)
    return sum_loss / n, sum_acc / n


losses = []
start = time.perf_counter()
for epoch in range(max_epoch):
    sum_loss = 0.0
    for x, t in train_loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        sum_loss += float(loss.data) * len(t)
    test_loss, test_acc = evaluate(model, test_loader)
    print(f"epoch {epoch + 1}: train loss {sum_loss / len(train_set):.4f}  "
          f"test loss {test_loss:.4f}  test accuracy {test_acc:.4f}")
elapsed = time.perf_counter() - start
print(f"{max_epoch} epochs in {elapsed:.1f} s")

# %%
fig = plot_curves({"mini-batch loss": losses}, xlabel="iteration", title="Training loss on MNIST",
                  to_file=out_dir / "loss.png")

# %% [markdown]
# Where does the model go wrong? The digits it gets wrong are often ones a
# person would hesitate over too:

# %%
with dz.no_grad():
    pred = model(np.stack([test_set[i][0] for i in range(len(test_set))])).data.argmax(axis=1)
wrong = np.flatnonzero(pred != test_set.label)
print(f"{len(wrong)} of {len(test_set)} test digits misclassified")
fig, axes = plt.subplots(1, 8, figsize=(8, 1.6))
for ax, i in zip(axes, wrong[:8]):
    ax.imshow(test_set.data[i, 0], cmap="gray_r")
    ax.set_title(f"{test_set.label[i]}→{pred[i]}", fontsize=9)
    ax.axis("off")
save_figure(fig, out_dir / "misclassified.png")
plt.show()

# %% [markdown]
# ## Exercise
# 1. Write `per_class_accuracy(pred, labels)`, which returns an array of 10
#    numbers: for each digit $d$, the fraction of examples with label $d$ that
#    were predicted as $d$. The self-check confirms that weighting these by how
#    often each digit occurs gives back the overall accuracy.
# 2. **Implement then test: reading IDX.** Write `parse_idx(raw)` for the
#    bytes of an uncompressed IDX file of `uint8` values: byte 3 (counting from
#    0) is the number
#    of dimensions $d$, then come $d$ big-endian `uint32` sizes (`np.frombuffer`
#    with dtype `">u4"`, `count` and `offset`), then the values. Return the
#    values as a `uint8` array of that shape (the validation of `load_idx` is
#    not needed here). The self-check writes a random array in this layout and
#    compares your reader with `datasets.load_idx`.

# %%
#| exercise
def per_class_accuracy(pred, labels):
    raise NotImplementedError(
        "Exercise (step 53): for each digit, the fraction of its examples (by label) that "
        "were predicted right; 10 numbers"
    )

# %%
#| solution
def per_class_accuracy(pred, labels):
    return np.array([(pred[labels == d] == d).mean() for d in range(10)])

# %%
#| check
per_class = per_class_accuracy(pred, test_set.label)
counts = np.bincount(test_set.label, minlength=10)
overall = (pred == test_set.label).mean()
assert np.shape(per_class) == (10,), f"expected 10 numbers, got shape {np.shape(per_class)}"
assert abs((per_class * counts).sum() / counts.sum() - overall) < 1e-9, (
    "weighting your per-class accuracies by the digit counts does not give the overall "
    "accuracy: divide by the number of examples *labelled* d, not predicted d"
)
# a small case worked by hand: two examples of each digit; the first of each odd digit is
# predicted as the digit after it, so the odd digits score 1/2 and the even ones 1
small_labels = np.repeat(np.arange(10), 2)
small_pred = small_labels.copy()
small_pred[2::4] = (small_labels[2::4] + 1) % 10
expected = np.tile([1.0, 0.5], 5)
got = np.asarray(per_class_accuracy(small_pred, small_labels), dtype=float)
assert np.allclose(got, expected), (
    f"labels {small_labels.tolist()} predicted as {small_pred.tolist()} should give {expected}, "
    f"got {got}: each digit's own fraction of right predictions, not one number for all"
)
print("hardest digit:", int(per_class.argmin()), f"({per_class.min():.3f})")
print("self-check passed: the per-class accuracies average back to the overall one, and a "
      "case worked by hand comes out right")

# %%
#| exercise
def parse_idx(raw):
    raise NotImplementedError(
        "Exercise (step 53): read the number of dimensions, then the sizes, then the values "
        "after the header, shaped by the sizes (the layout above)"
    )

# %%
#| solution
def parse_idx(raw):
    ndim = raw[3]
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)

# %%
#| check
rng = np.random.default_rng(0)
with tempfile.TemporaryDirectory() as tmp:
    for shape in [(7,), (3, 4, 5), (2, 28, 28)]:
        values = rng.integers(0, 256, size=shape, dtype=np.uint8)
        raw = bytes([0, 0, 0x08, len(shape)]) + np.array(shape, ">u4").tobytes() + values.tobytes()
        path = Path(tmp) / "sample.idx"
        path.write_bytes(raw)
        mine = parse_idx(raw)
        assert np.shape(mine) == shape, (
            f"expected shape {shape}, got {np.shape(mine)}: the sizes are big-endian uint32 "
            "(dtype '>u4') starting at byte 4"
        )
        assert np.array_equal(mine, datasets.load_idx(path)), (
            f"the values differ from load_idx's for shape {shape}: they start after the header, "
            "at byte 4 + 4 * ndim"
        )
print("self-check passed: parse_idx reads IDX files as datasets.load_idx does")
