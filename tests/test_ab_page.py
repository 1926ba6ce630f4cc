"""The blind A/B page (`pfnn-eval --ab`, `--ab-results`): the key, un-blinding, the page's HTML, and the
rendered page in a real browser (headless Chromium: the videos play, a choice is saved as answers.json)."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.evaluation import ab_cli
from pfnn_core.evaluation.ab_key import BlindKey, BlindPair, blind_pairs, make_key, read_key, write_key
from pfnn_core.evaluation.ab_page import page_data, render_page
from pfnn_core.evaluation.ab_results import read_answers, results_table, totals, unblind

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "assets" / "models" / "default.safetensors"
KNOWN_KEY = BlindKey("ab-test", 7, {"A": "/models/pfnn.safetensors", "B": "/models/matching.safetensors"},
                     (BlindPair("walk", "A", "B"), BlindPair("turn", "B", "A"), BlindPair("run", "A", "B"),
                      BlindPair("stop", "B", "A")))


def answers_for(choices: dict, page="ab-test") -> dict:
    return {"page": page, "answers": [{"drive": drive, "choice": choice, "note": ""} for drive, choice in choices.items()]}


# ---- the key -------------------------------------------------------------------------------------
def test_sides_are_drawn_from_the_seed_and_both_orders_occur():
    names = [f"drive_{i}" for i in range(40)]
    first, again, other = blind_pairs(names, 5), blind_pairs(names, 5), blind_pairs(names, 6)
    assert first == again
    assert first != other
    lefts = [pair.left for pair in first]
    assert 8 <= lefts.count("A") <= 32  # binomial(40, 0.5): outside this range has odds under 1e-4
    assert all({pair.left, pair.right} == {"A", "B"} for pair in first)
    assert [pair.drive for pair in first] == names


def test_key_survives_the_file_and_videos_name_no_model(tmp_path):
    key = make_key(["walk", "turn"], {"A": "a.safetensors", "B": "b.safetensors"}, seed=11)
    assert read_key(write_key(tmp_path / "key.json", key)) == key
    assert {key.pairs[0].video("left"), key.pairs[0].video("right")} == {"videos/walk-left.mp4", "videos/walk-right.mp4"}
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"page": "x", "models": {"A": "a"}, "pairs": []}))
    with pytest.raises(ValueError, match="models"):
        read_key(broken)


def test_the_page_does_not_reveal_which_model_is_where():
    html = render_page(KNOWN_KEY, {"walk": "a walk"})
    assert "pfnn.safetensors" not in html and "matching.safetensors" not in html
    data = page_data(KNOWN_KEY, {})
    assert set(data) == {"page", "folder", "pairs"}
    assert all(set(pair) == {"drive", "description", "left", "right"} for pair in data["pairs"])
    assert '"left": "A"' not in html and '"left": "B"' not in html
    assert "ab-test" in html  # the page id travels with the answers


# ---- un-blinding ---------------------------------------------------------------------------------
def test_unblinding_maps_each_side_back_to_its_model():
    verdicts = unblind(answers_for({"walk": "left", "turn": "left", "run": "right", "stop": "same"}), KNOWN_KEY)
    # walk: A was left; turn: B was left; run: B was right; stop: same
    assert [v.preferred for v in verdicts] == ["A", "B", "B", "same"]
    assert totals(verdicts) == {"A": 1, "B": 2, "same": 1, "unanswered": 0}


def test_drives_left_open_are_unanswered_and_foreign_answers_are_refused():
    verdicts = unblind(answers_for({"turn": "right", "walk": None}), KNOWN_KEY)
    assert [v.preferred for v in verdicts] == ["unanswered", "A", "unanswered", "unanswered"]
    with pytest.raises(ValueError, match="page"):
        unblind(answers_for({"walk": "left"}, page="ab-other"), KNOWN_KEY)
    with pytest.raises(ValueError, match="jump"):
        unblind(answers_for({"jump": "left"}), KNOWN_KEY)


def test_answers_file_is_checked_and_the_command_prints_the_table(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(answers_for({"walk": "up"})))
    with pytest.raises(ValueError, match=r"answers\[0\]\.choice"):
        read_answers(bad)
    write_key(tmp_path / "key.json", KNOWN_KEY)
    answers = answers_for({"walk": "right", "turn": "right", "run": "left", "stop": "left"})
    answers["answers"][0]["note"] = "feet slide"
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    assert ab_cli.main(["--ab-results", str(tmp_path / "answers.json")]) == 0  # the key found beside the answers
    out = capsys.readouterr().out
    assert "| walk | B |" in out and "| turn | A |" in out and "| run | A |" in out and "| stop | B |" in out
    assert "| A (pfnn.safetensors) | 2 | 2 |" in out and "| B (matching.safetensors) | 2 | 2 |" in out
    assert "walk (B): feet slide" in out


def test_results_table_has_a_column_per_rater():
    one = unblind(answers_for({"walk": "left"}), KNOWN_KEY)
    two = unblind(answers_for({"walk": "right", "run": "same"}), KNOWN_KEY)
    table = results_table({"ann": one, "bob": two}, KNOWN_KEY)
    assert "| walk | A | B |" in table and "| run | unanswered | same |" in table
    assert "| unanswered | 3 | 2 | 5 |" in table


# ---- rendering and the browser ---------------------------------------------------------------------
TINY_DRIVES = ({"name": "tiny_walk", "segments": [{"duration": 1.0, "move": [0, 1]}]},
               {"name": "tiny_turn", "segments": [{"duration": 0.5, "move": [0, 1]}, {"duration": 0.5, "move": [1, 0]}]})


def video_frames(path) -> tuple[np.ndarray, dict]:
    import imageio.v2 as imageio

    reader = imageio.get_reader(str(path))
    try:
        return np.stack([frame for frame in reader]).astype(float), reader.get_meta_data()
    finally:
        reader.close()


@pytest.fixture(scope="module")
def rendered_page(tmp_path_factory, random_checkpoint):
    folder = tmp_path_factory.mktemp("ab")
    scripts = []
    for drive in TINY_DRIVES:
        scripts.append(folder / f"{drive['name']}.json")
        scripts[-1].write_text(json.dumps(drive))
    page = ab_cli.make_page([DEFAULT_MODEL, random_checkpoint], folder / "page", scripts=scripts, seed=3,
                            size=(320, 180), fps=30)
    return page, folder


@pytest.mark.slow
def test_both_models_are_filmed_into_the_sides_the_key_names(rendered_page, random_checkpoint):
    page, folder = rendered_page
    key = read_key(page["key"])
    assert [pair.drive for pair in key.pairs] == ["tiny_walk", "tiny_turn"]
    for pair in key.pairs:
        for side in ("left", "right"):
            frames, meta = video_frames(page["page"].parent / pair.video(side))
            assert frames.shape == (30, 180, 320, 3)  # 1 s at 30 fps
            assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    # film model A alone; its video must match the side the key put A on, not the other
    pair = key.pairs[0]
    job = {"model": str(DEFAULT_MODEL), "width": 320, "height": 180, "fps": 30,
           "videos": [{"script": TINY_DRIVES[0], "path": str(folder / "alone.mp4")}]}
    (folder / "job.json").write_text(json.dumps(job))
    subprocess.run([sys.executable, "-m", "app.ab", str(folder / "job.json")], cwd=ROOT, check=True,
                   capture_output=True)
    alone = video_frames(folder / "alone.mp4")[0]
    same = np.abs(alone - video_frames(page["page"].parent / pair.video(pair.side_of("A")))[0]).mean()
    other = np.abs(alone - video_frames(page["page"].parent / pair.video(pair.side_of("B")))[0]).mean()
    assert same < 0.25 * other, (same, other)


def chromium_driver(download_dir: Path):
    paths = [shutil.which(name) for name in ("chromium", "chromedriver")]
    if not all(paths):
        pytest.skip("Debian's chromium and chromium-driver are not installed (./run.sh test installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,2400", "--autoplay-policy=no-user-gesture-required"):
        options.add_argument(argument)
    options.binary_location = paths[0]
    options.add_experimental_option("prefs", {"download.default_directory": str(download_dir),
                                              "download.prompt_for_download": False})
    return webdriver.Chrome(service=Service(paths[1]), options=options)


def wait_for(condition, limit_s: float = 30.0):
    """Poll `condition()` until it is truthy (its value) or the limit passes (its last value)."""
    end = time.monotonic() + limit_s
    value = condition()
    while not value and time.monotonic() < end:
        time.sleep(0.2)
        value = condition()
    return value


@pytest.mark.slow
def test_the_page_plays_both_videos_and_saves_the_answers_in_chromium(rendered_page, tmp_path):
    page, _ = rendered_page
    key = read_key(page["key"])
    driver = chromium_driver(tmp_path)
    try:
        driver.get(page["page"].resolve().as_uri())
        boxes = driver.find_elements("css selector", ".pair")
        assert [box.get_attribute("data-drive") for box in boxes] == ["tiny_walk", "tiny_turn"]
        assert driver.execute_script("return document.createElement('video').canPlayType('video/mp4; codecs=\"avc1.64001e\"')")
        boxes[0].find_element("css selector", ".play-both").click()
        state = "return [...arguments[0].querySelectorAll('video')].map(v => [v.readyState, v.currentTime, !!v.error])"
        played = wait_for(lambda: all(ready >= 2 and now > 0.2 and not error
                                      for ready, now, error in driver.execute_script(state, boxes[0])))
        assert played, driver.execute_script(state, boxes[0])
        boxes[0].find_element("css selector", "input[value=left]").click()
        boxes[1].find_element("css selector", "input[value=same]").click()
        boxes[1].find_element("css selector", ".note").send_keys("both glide")
        assert "2 of 2 answered" in driver.find_element("id", "progress").text
        driver.find_element("id", "save").click()
        saved = wait_for(lambda: (tmp_path / "answers.json").is_file() and (tmp_path / "answers.json").stat().st_size > 0)
        assert saved, "no answers.json downloaded"
        shown = json.loads(driver.find_element("id", "answers-json").get_attribute("textContent"))
    finally:
        driver.quit()
    answers = read_answers(tmp_path / "answers.json")
    assert answers["answers"] == shown["answers"]
    assert [(a["drive"], a["choice"], a["note"]) for a in answers["answers"]] == [
        ("tiny_walk", "left", ""), ("tiny_turn", "same", "both glide")]
    verdicts = unblind(answers, key)
    assert [v.preferred for v in verdicts] == [key.pairs[0].left, "same"]
