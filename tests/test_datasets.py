"""Dataset base class, the spiral data set and transforms."""

from __future__ import annotations

import numpy as np
import pytest

from dezero_like import datasets
from dezero_like import transforms as T
from dezero_like.datasets import Dataset, Spiral


class Squares(Dataset):
    """A tiny labelled dataset: x = i, t = i**2."""

    def prepare(self):
        self.data = np.arange(5, dtype=np.float64)
        self.label = self.data**2


class Unlabelled(Dataset):
    def prepare(self):
        self.data = np.ones((3, 2))


def test_dataset_gives_examples_and_length():
    ds = Squares()
    assert len(ds) == 5
    assert ds[2] == (2.0, 4.0)
    assert ds[-1] == (4.0, 16.0)
    assert ds[np.int64(3)] == (3.0, 9.0)
    assert ds.train is True and Squares(train=False).train is False


def test_transforms_apply_when_read_not_to_the_stored_data():
    ds = Squares(transform=lambda x: x * 10, target_transform=lambda t: -t)
    assert ds[3] == (30.0, -9.0)
    assert ds.data[3] == 3.0 and ds.label[3] == 9.0


def test_unlabelled_dataset_gives_none_as_label():
    x, t = Unlabelled()[0]
    assert t is None and x.shape == (2,)


def test_dataset_index_must_be_an_int():
    with pytest.raises(TypeError, match="one example at a time.*DataLoader"):
        Squares()[1:3]
    with pytest.raises(TypeError, match="callables"):
        Squares(transform=3)


def test_base_dataset_without_prepare_is_empty():
    assert len(Dataset()) == 0
    with pytest.raises(RuntimeError, match=r"prepare\(\) did not set self.data"):
        Dataset()[0]


def test_spiral_has_300_points_in_3_balanced_classes():
    ds = Spiral()
    assert len(ds) == 300
    assert ds.data.shape == (300, 2) and ds.data.dtype == np.float32
    assert ds.label.dtype == np.int64
    assert np.bincount(ds.label).tolist() == [100, 100, 100]
    radius = np.linalg.norm(ds.data, axis=1)
    assert radius.max() < 1.0 and radius.min() == 0.0  # each arm starts at the origin


def test_spiral_is_deterministic_and_leaves_global_random_state_alone():
    np.random.seed(5)
    before = np.random.rand()
    np.random.seed(5)
    a = Spiral()
    after = np.random.rand()
    assert before == after
    b = Spiral()
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.label, b.label)


def test_spiral_train_and_test_differ_and_seed_is_honoured():
    train, test = Spiral(train=True), Spiral(train=False)
    assert not np.array_equal(train.data, test.data)
    x, t = datasets.get_spiral(seed=1984)
    np.testing.assert_array_equal(x, train.data)
    assert not np.array_equal(Spiral(seed=1).data, train.data)


def test_spiral_points_lie_on_their_arm():
    """Without noise, arm j at radius r has angle 4j + 4r; the noise has sd 0.2."""
    x, t = datasets.get_spiral()
    r = np.linalg.norm(x, axis=1)
    angle = np.arctan2(x[:, 0], x[:, 1])  # x = r sin(theta), y = r cos(theta)
    expected = 4.0 * t + 4.0 * r
    diff = np.angle(np.exp(1j * (angle - expected)))  # wrapped to (-pi, pi]
    keep = r > 0
    assert np.abs(diff[keep]).max() < 1.0  # 5 sd
    assert 0.15 < diff[keep].std() < 0.25


# --------------------------------------------------------------------------- #
# Transforms
# --------------------------------------------------------------------------- #


def test_mnist_style_pipeline():
    image = np.arange(4, dtype=np.uint8).reshape(2, 2) * 85
    f = T.Compose([T.Flatten(), T.ToFloat(), T.Normalize(0.0, 255.0)])
    y = f(image)
    assert y.shape == (4,) and y.dtype == np.float32
    np.testing.assert_allclose(y, [0, 1 / 3, 2 / 3, 1], rtol=1e-6)
    assert "Flatten()" in repr(f) and "Normalize(mean=0.0, std=255.0)" in repr(f)


def test_compose_order_and_identity():
    f = T.Compose([lambda x: x + 1, lambda x: x * 10])
    assert f(1) == 20
    assert T.Compose()(7) == 7
    with pytest.raises(TypeError, match="callables"):
        T.Compose([T.Flatten(), "not a transform"])


def test_normalize_keeps_float32_with_array_statistics():
    x = np.ones((3, 2), dtype=np.float32)
    mean = np.array([0.5, 0.0])  # float64 statistics
    std = np.array([0.5, 2.0])
    y = T.Normalize(mean, std)(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, [[1.0, 0.5]] * 3)
    with pytest.raises(ValueError, match="std must not be zero"):
        T.Normalize(0.0, 0.0)


def test_astype_toint_tofloat():
    assert T.AsType()(np.array([1, 2])).dtype == np.float32
    assert T.AsType(np.float64)(np.array([1])).dtype == np.float64
    assert T.ToFloat()(np.array(3)).dtype == np.float32
    assert T.ToInt()(np.array([1.0, 2.0])).tolist() == [1, 2]
    with pytest.raises(ValueError, match="not a whole number"):  # not cut to 1 (sweep 8)
        T.ToInt()(np.array([1.9, 2.0]))
    assert T.ToInt()(np.array([1.0])).dtype == np.int64
    assert T.ToInt(np.uint8)(np.array([1.0])).dtype == np.uint8
    with pytest.raises(TypeError, match="floating"):
        T.ToFloat(np.int32)
    with pytest.raises(TypeError, match="integer"):
        T.ToInt(np.float32)
    assert repr(T.ToFloat()) == "ToFloat(float32)"


def test_flatten_one_example():
    assert T.Flatten()(np.zeros((1, 28, 28))).shape == (784,)


def test_transforms_on_the_dataset():
    ds = Spiral(transform=T.Compose([T.AsType(np.float64)]), target_transform=T.ToInt(np.int8))
    x, t = ds[0]
    assert x.dtype == np.float64 and t.dtype == np.int8


# --------------------------------------------------------------------------- #
# Arguments checked early, and MNIST errors that name what is wrong (no real data needed)
# --------------------------------------------------------------------------- #

TEST_IMAGES, TEST_LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("DEZERO_LIKE_OFFLINE", "1")
    monkeypatch.delenv("DEZERO_LIKE_DATA", raising=False)


def _unavailable(**kwargs):
    with pytest.raises(datasets.MNISTUnavailableError) as info:
        datasets.MNIST(**kwargs)
    return str(info.value)


def test_sin_curve_refuses_a_num_data_that_is_not_an_int():
    from dezero_like.datasets_seq import SinCurve

    for bad in (100.0, "100", True):
        with pytest.raises(TypeError, match=r"num_data must be an int .*got"):
            SinCurve(num_data=bad)
    with pytest.raises(TypeError, match="periods must be a number"):
        SinCurve(periods="2")
    assert len(SinCurve(num_data=np.int64(50))) == 49


def test_mnist_n_train_and_download_are_checked_before_any_file(offline, tmp_path):
    for bad in ("8000", 8000.5, True):
        with pytest.raises(TypeError, match="n_train must be an int"):
            datasets.MNIST(source="test-split", n_train=bad, data_dir=tmp_path)
        with pytest.raises(TypeError, match="n_train must be an int"):  # not a missing file
            datasets.mnist_train_test(data_dir=tmp_path, n_train=bad)
    with pytest.raises(ValueError, match="between 1 and 9,999"):
        datasets.mnist_train_test(data_dir=tmp_path, n_train=0)
    for bad in ("no", 1, 0):  # 1 and 0 too: the loaders' flags are True or False
        with pytest.raises(TypeError, match="download must be None, True or False"):
            datasets.MNIST(train=False, data_dir=tmp_path, download=bad)
    for bad in ("test", 0, None):  # "test" is true: it gave the training split, silently
        with pytest.raises(TypeError, match="train must be True or False"):
            datasets.MNIST(train=bad, data_dir=tmp_path)
        with pytest.raises(TypeError, match="train must be True or False"):
            datasets.Spiral(train=bad)
    assert len(datasets.Spiral(train=np.False_)) == 300
    for call in (lambda: datasets.get_spiral("test"),
                 lambda: datasets.MNIST.available(train="test", data_dir=tmp_path)):
        with pytest.raises(TypeError, match="train must be True or False"):
            call()


def test_mnist_download_false_as_a_numpy_bool_disables_downloads(tmp_path, monkeypatch):
    """np.False_ passed the check but not ``download is False``: it downloaded anyway."""
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE", raising=False)
    with pytest.raises(datasets.MNISTUnavailableError,
                       match=r"downloads are disabled \(download=False\)"):
        datasets.MNIST(train=False, data_dir=tmp_path, download=np.False_,
                       mirrors=["http://127.0.0.1:9/"])


def test_mnist_train_test_names_a_damaged_test_file_and_does_not_offer_the_split(offline,
                                                                                 tmp_path):
    (tmp_path / "mnist").mkdir()
    (tmp_path / "mnist" / TEST_IMAGES).write_bytes(b"\x1f\x8b cut short")
    with pytest.raises(datasets.MNISTUnavailableError) as info:
        datasets.mnist_train_test(data_dir=tmp_path)
    msg = str(info.value)
    assert f"{TEST_IMAGES} has the wrong size or MD5 sum" in msg
    assert TEST_LABELS in msg and "train-images-idx3-ubyte.gz" in msg
    assert "source='test-split'" not in msg  # the split that has just failed
    assert "intact copies of the files" in msg


def test_mnist_train_test_with_no_network_names_every_failed_download(tmp_path, monkeypatch):
    """Downloads allowed, and no mirror answers (a closed local port): the one error names the
    failed downloads of both splits, not only the test split's, and its fix is the network,
    not a DEZERO_LIKE_OFFLINE that is not set."""
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE", raising=False)
    monkeypatch.setattr(datasets.MNIST, "MIRRORS", ("http://127.0.0.1:9/",))
    with pytest.raises(datasets.MNISTUnavailableError) as info:
        datasets.mnist_train_test(data_dir=tmp_path, progress=False)
    msg = str(info.value)
    tried = msg[msg.index("could not download"):msg.index("To fix:")]
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", TEST_IMAGES,
                 TEST_LABELS):
        assert name in tried, (name, tried)
    assert len(info.value.downloads) == 4
    assert "DEZERO_LIKE_OFFLINE" not in msg and "connect this machine to the network" in msg


def test_a_data_folder_that_is_a_file_is_named_offline_and_online(offline, tmp_path,
                                                                 monkeypatch):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    msg = _unavailable(train=False, data_dir=afile)
    assert f"{afile} is a file, not a folder" in msg and "put the files in" not in msg
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")  # the local mirror below is never reached
    msg = _unavailable(train=False, data_dir=afile, progress=False,
                       mirrors=[(tmp_path / "mirror").as_uri() + "/"])
    assert f"{afile} is a file, not a folder" in msg and "Not a directory" not in msg


def test_a_data_folder_naming_the_mnist_folder_itself_says_set_the_parent(offline, tmp_path,
                                                                        monkeypatch):
    folder = tmp_path / "mnist"
    folder.mkdir()
    for name in (TEST_IMAGES, TEST_LABELS):
        (folder / name).write_bytes(b"here")
    monkeypatch.setenv("DEZERO_LIKE_DATA", str(folder))
    msg = _unavailable(train=False)
    assert f"are in {folder} itself" in msg
    assert f"set DEZERO_LIKE_DATA (or data_dir=...) to the parent folder, {tmp_path}" in msg


def test_a_partly_failed_download_names_only_the_files_still_missing(offline, tmp_path,
                                                                    monkeypatch):
    import hashlib

    labels = b"pretend labels"

    class Small(datasets.MNIST):  # a test-labels file whose published sum is this one's
        FILES = {**datasets.MNIST.FILES, "test-labels": (
            TEST_LABELS, hashlib.md5(labels).hexdigest(), len(labels))}

    mirror = tmp_path / "mirror"  # holds the labels, not the images
    mirror.mkdir()
    (mirror / TEST_LABELS).write_bytes(labels)
    monkeypatch.delenv("DEZERO_LIKE_OFFLINE")
    with pytest.raises(datasets.MNISTUnavailableError) as info:
        Small(train=False, data_dir=tmp_path / "data", mirrors=[mirror.as_uri() + "/"],
              progress=False)
    msg = str(info.value)
    assert f": {TEST_IMAGES} is missing, and the download failed" in msg
    assert TEST_LABELS not in msg  # it came: not missing, and no download of it failed
    assert (tmp_path / "data" / "mnist" / TEST_LABELS).read_bytes() == labels
