"""models.download against a real HTTP server on localhost: the model's
files arrive byte for byte, an installed model imports as a package with
its parsed nets, and a missing file fails cleanly (status 1, nothing
left behind)."""
import functools
import http.server
import importlib.util
import os
import sys
import threading

import pytest

from doppio import core
from doppio.models import download


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serves tmp_path/site; yields that folder."""
    site = tmp_path / 'site'
    site.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(download, 'DOWNLOAD_BASE_URL',
                        'http://127.0.0.1:%d/' % httpd.server_address[1])
    yield site
    httpd.shutdown()
    httpd.server_close()


def publish(site, name):
    """Writes a model's two nets under site/name; returns their bytes."""
    init, predict = core.Net(name + '_init'), core.Net(name + '_predict')
    init.ConstantFill([], 'w', shape=[2, 3], value=0.5)
    predict.FC(['data', 'w', 'b'], 'out')
    (site / name).mkdir()
    blobs = {'init_net.pb': init.Proto().SerializeToString(),
             'predict_net.pb': predict.Proto().SerializeToString()}
    for filename, data in blobs.items():
        (site / name / filename).write_bytes(data)
    return blobs


def test_download_writes_both_nets(server, tmp_path, monkeypatch):
    blobs = publish(server, 'tiny_net')
    work = tmp_path / 'work'
    work.mkdir()
    monkeypatch.chdir(work)
    download.main(['tiny_net'])
    for filename, data in blobs.items():
        assert (work / 'tiny_net' / filename).read_bytes() == data


def test_install_makes_an_importable_model_package(server, tmp_path, monkeypatch):
    blobs = publish(server, 'tiny_net')
    models_dir = tmp_path / 'models'
    models_dir.mkdir()
    monkeypatch.setattr(download, '_install_dir', lambda: str(models_dir))
    sym_init = os.path.join(os.path.dirname(os.path.realpath(download.__file__)),
                            '__sym_init__.py')
    (models_dir / '__sym_init__.py').write_text(open(sym_init).read())
    download.main(['-i', 'tiny_net'])
    spec = importlib.util.spec_from_file_location(
        'tiny_net', str(models_dir / 'tiny_net' / '__init__.py'))
    package = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(package)
    assert package.init_net.SerializeToString() == blobs['init_net.pb']
    assert package.predict_net.op[0].type == 'FC'


def test_a_missing_model_fails_and_cleans_up(server, tmp_path, monkeypatch, capsys):
    (server / 'half_net').mkdir()
    (server / 'half_net' / 'predict_net.pb').write_bytes(b'\n\x04half')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        download.main(['half_net'])
    assert exit_info.value.code == 1
    out = capsys.readouterr().out
    assert 'HTTP Error] 404' in out and 'init_net.pb' in out
    assert not (tmp_path / 'half_net').exists()


def test_names_and_existing_files_are_checked(server, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    download.main(['../escape'])
    assert "is not a valid model name" in capsys.readouterr().out
    (tmp_path / 'blocked').write_text('a file')
    with pytest.raises(Exception, match='a file of that name exists'):
        download.main(['blocked'])
    assert (tmp_path / 'blocked').read_text() == 'a file'


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-q', '-rs', '-p', 'no:cacheprovider']))
