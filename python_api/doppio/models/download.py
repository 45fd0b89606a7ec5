"""caffe2.python.models.download: fetches a pretrained model's
predict_net.pb and init_net.pb.

    python -m caffe2.python.models.download [-i] [-f] squeezenet

saves them under ./squeezenet (or, with -i, installs them as the package
caffe2.python.models.squeezenet, whose init_net / predict_net are the
parsed NetDefs). A failed download removes what it wrote and exits with
status 1, saying which file and why.
"""
import argparse
import os
import re
import shutil
import sys
import urllib.error
import urllib.request

DOWNLOAD_BASE_URL = "https://s3.amazonaws.com/download.caffe2.ai/models/"
DOWNLOAD_COLUMNS = 70
MODEL_FILES = ('predict_net.pb', 'init_net.pb')


def deleteDirectory(top_dir):
    shutil.rmtree(top_dir)


def progressBar(percentage):
    full = int(DOWNLOAD_COLUMNS * percentage / 100)
    bar = full * "#" + (DOWNLOAD_COLUMNS - full) * " "
    sys.stdout.write(u"\u001b[1000D[" + bar + "] " + str(percentage) + "%")
    sys.stdout.flush()


def downloadFromURLToFile(url, filename, show_progress=True):
    """Streams `url` into `filename`; an HTTP or network failure is an
    Exception naming the URL."""
    print("Downloading from {}".format(url))
    try:
        response = urllib.request.urlopen(url)
    except urllib.error.HTTPError as e:
        raise Exception("Could not download model. [HTTP Error] {}: {} ({}).".format(
            e.code, e.reason, url))
    except urllib.error.URLError as e:
        raise Exception("Could not download model. [URL Error] {} ({}).".format(e.reason, url))
    with response:
        length = response.info().get('Content-Length')
        size = int(length.strip()) if length else 0
        print("Writing to {}".format(filename))
        done = 0
        if show_progress and size:
            progressBar(0)
        with open(filename, "wb") as local_file:
            while True:
                chunk = response.read(8192)
                if not chunk:
                    break
                local_file.write(chunk)
                done += len(chunk)
                if show_progress and size:
                    progressBar(int(100 * done / size))
        if size and done != size:
            raise Exception("Could not download model: {} ended after {} of {} bytes.".format(
                url, done, size))
    if show_progress and size:
        print("")


def getURLFromName(name, filename):
    return "{}{}/{}".format(DOWNLOAD_BASE_URL, name, filename)


def _install_dir():
    """Where -i installs models: this package's folder."""
    return os.path.dirname(os.path.realpath(__file__))


def _confirm_overwrite(model_folder, force):
    """Makes room for the model folder; False when the user declines."""
    if os.path.exists(model_folder) and not os.path.isdir(model_folder):
        if not force:
            raise Exception("Cannot create folder {} for storing the model: a file of that "
                            "name exists (use -f to replace it).".format(model_folder))
        print("Overwriting existing file! ({})".format(model_folder))
        os.remove(model_folder)
    if os.path.isdir(model_folder):
        if not force:
            response = input("Model already exists, continue? [y/N] ")
            if response.upper() != 'Y':
                print("Cancelling download...")
                return False
        print("Overwriting existing folder! ({})".format(model_folder))
        deleteDirectory(model_folder)
    return True


def downloadModel(model, args):
    """Downloads `model` (args.install, args.force as the command line's
    -i / -f) into ./<model> or, installing, this package's folder."""
    model_folder = os.path.join(_install_dir(), model) if args.install else model
    if not _confirm_overwrite(model_folder, args.force):
        return
    os.makedirs(model_folder)
    for name in MODEL_FILES:
        try:
            downloadFromURLToFile(getURLFromName(model, name), os.path.join(model_folder, name),
                                  show_progress=sys.stdout.isatty())
        except Exception as e:
            print("Abort: {}".format(e))
            print("Cleaning up...")
            deleteDirectory(model_folder)
            sys.exit(1)
    if args.install:
        os.symlink(os.path.join(_install_dir(), "__sym_init__.py"),
                   os.path.join(model_folder, "__init__.py"))


def validModelName(name):
    return name != '__init__' and re.match(r"^[/0-9a-zA-Z_-]+$", name) is not None


def main(argv=None):
    parser = argparse.ArgumentParser(description='Download or install pretrained models.')
    parser.add_argument('model', nargs='+', help='Model to download/install.')
    parser.add_argument('-i', '--install', action='store_true', help='Install the model.')
    parser.add_argument('-f', '--force', action='store_true',
                        help='Force a download/installation.')
    args = parser.parse_args(argv)
    for model in args.model:
        if validModelName(model):
            downloadModel(model, args)
        else:
            print("'{}' is not a valid model name.".format(model))


if __name__ == "__main__":
    main()
