"""Each converter on a real file of its format, written in the test by that format's authoring library.

Every document carries a heading, a distinctive sentence, a list and/or a table where the format has
them, and non-ASCII text; the assertions look for that content in the Markdown. Bad inputs (damaged,
truncated, encrypted, bombs, crafted XML and RTF) must each give one ConversionError with a one-line
message that names the file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import time
import zipfile
from pathlib import Path

import pytest

from drsg.pipeline.convert import ConversionError, Converted, Limits, to_markdown, to_markdown_bytes

SENTENCE = "The falcon migration reached Zürich on Tuesday."
CJK = "广告点击"


def _png(tmp_path: Path) -> Path:
    from PIL import Image  # python-pptx depends on Pillow

    path = tmp_path / "dot.png"
    Image.new("RGB", (8, 8), (200, 30, 30)).save(path)
    return path


def _fails(path: Path, *fragments: str, limits: Limits | None = None) -> str:
    with pytest.raises(ConversionError) as caught:
        to_markdown(path, limits=limits) if limits else to_markdown(path)
    message = str(caught.value)
    assert "\n" not in message, message
    assert message.startswith(path.name + ":"), message
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- Word -------------------------------------------------------------------------------------------------------


def _docx(path: Path, tmp_path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly Report", level=1)
    document.add_paragraph(SENTENCE)
    document.add_heading(f"Details {CJK}", level=2)
    document.add_paragraph("first bullet", style="List Bullet")
    document.add_paragraph("second bullet", style="List Bullet")
    document.add_paragraph("step one", style="List Number")
    document.add_paragraph("step two", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for r, row in enumerate([("City", "Clicks"), ("Zürich", "42"), ("北京", "7|8")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    paragraph = document.add_paragraph("Some ")
    paragraph.add_run("bold").bold = True
    paragraph.add_run(" words.")
    document.add_picture(str(_png(tmp_path)))
    document.save(str(path))
    return path


def test_docx(tmp_path: Path) -> None:
    converted = to_markdown(_docx(tmp_path / "report.docx", tmp_path))
    md = converted.markdown
    assert converted.format == "docx"
    assert "# Quarterly Report\n" in md
    assert SENTENCE in md
    assert f"## Details {CJK}\n" in md
    assert "- first bullet\n- second bullet\n" in md
    assert "1. step one\n2. step two\n" in md
    assert "| City | Clicks |\n| --- | --- |\n| Zürich | 42 |\n| 北京 | 7\\|8 |" in md
    assert "**bold**" in md
    assert "base64" not in md and "data:" not in md
    assert any("image" in note for note in converted.notes)
    assert md.index("Quarterly Report") < md.index(SENTENCE) < md.index("first bullet") < md.index("| City")


def test_docx_named_bin_is_detected_by_content(tmp_path: Path) -> None:
    path = _docx(tmp_path / "report.docx", tmp_path).rename(tmp_path / "upload.bin")
    converted = to_markdown(path)
    assert converted.format == "docx"
    assert SENTENCE in converted.markdown
    assert any("from its content" in note for note in converted.notes)


def test_docx_truncated_is_a_damaged_container(tmp_path: Path) -> None:
    good = _docx(tmp_path / "good.docx", tmp_path).read_bytes()
    bad = tmp_path / "cut.docx"
    bad.write_bytes(good[: len(good) // 2])
    _fails(bad, "not a valid .docx file", "damaged ZIP container")


def test_docx_with_a_flipped_byte_fails_its_crc(tmp_path: Path) -> None:
    good = bytearray(_docx(tmp_path / "good.docx", tmp_path).read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(good))) as zf:
        info = zf.getinfo("word/document.xml")
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size // 2
    good[at] ^= 0xFF
    bad = tmp_path / "flipped.docx"
    bad.write_bytes(bytes(good))
    _fails(bad, "not a valid .docx file")


def test_random_bytes_named_docx(tmp_path: Path) -> None:
    path = tmp_path / "fake.docx"
    path.write_bytes(bytes(range(256)) * 40)
    _fails(path, "not a valid .docx file", "damaged ZIP container")


def _rewrite(source: Path, target: Path, replace: dict[str, bytes], add: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            zout.writestr(item.filename, replace.get(item.filename, zin.read(item.filename)))
        for name, data in (add or {}).items():
            zout.writestr(name, data)
    return target


def test_docx_declaring_xml_entities_is_refused(tmp_path: Path) -> None:
    good = _docx(tmp_path / "good.docx", tmp_path)
    with zipfile.ZipFile(good) as zf:
        body = zf.read("word/document.xml")
    xxe = body.replace(b"?>", b'?>\n<!DOCTYPE w:document [<!ENTITY secret SYSTEM "file:///etc/passwd">]>', 1).replace(
        b"Quarterly Report", b"&secret;"
    )
    bad = _rewrite(good, tmp_path / "xxe.docx", {"word/document.xml": xxe})
    _fails(bad, "declares XML entities")


def test_zip_bomb_entry_over_the_unpacked_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.docx"
    _rewrite(_docx(tmp_path / "good.docx", tmp_path), bomb, {})
    with zipfile.ZipFile(bomb, "a", zipfile.ZIP_DEFLATED) as zf, zf.open("word/media/zeros.bin", "w") as entry:
        zeros = bytes(1 << 20)
        for _ in range(260):  # 260 MiB of zeros, a few hundred KB packed: over the default 256 MiB cap
            entry.write(zeros)
    assert bomb.stat().st_size < 2 * 1024 * 1024
    started = time.monotonic()
    _fails(bomb, "MiB, more than the limit of 256.0 MiB", "zip bomb")
    assert time.monotonic() - started < 2, "the cap must apply before anything is inflated"


def test_xml_entry_cap_for_formats_parsed_in_memory(tmp_path: Path) -> None:
    limits = Limits(max_xml_entry_bytes=1024)
    _fails(_docx(tmp_path / "report.docx", tmp_path), "of XML, more than the limit of 1,024 bytes", limits=limits)
    # xlsx sheets are streamed, so the cap does not apply to them
    assert "## Sheet: Sales" in to_markdown(_xlsx(tmp_path / "book.xlsx"), limits=limits).markdown


def test_too_many_entries(tmp_path: Path) -> None:
    _fails(_docx(tmp_path / "report.docx", tmp_path), "entries, more than the limit of 5", limits=Limits(max_entries=5))


# -- PowerPoint ---------------------------------------------------------------------------------------------------


def _pptx(path: Path, tmp_path: Path) -> Path:
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Roadmap Zürich"
    body = slide.placeholders[1].text_frame
    body.text = f"first point {CJK}"
    sub = body.add_paragraph()
    sub.text = "sub point"
    sub.level = 1
    slide.notes_slide.notes_text_frame.text = "Speaker note: mention the falcons."

    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Numbers"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(1.5), Inches(4), Inches(1.5)).table
    for r, row in enumerate([("City", "Clicks"), ("Zürich", "42"), ("北京", "7")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    box = second.shapes.add_textbox(Inches(1), Inches(3.2), Inches(6), Inches(1))
    box.text_frame.text = SENTENCE
    second.shapes.add_picture(str(_png(tmp_path)), Inches(7), Inches(3.2))

    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "Trend"
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Clicks", (10, 20))
    chart = third.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1.5), Inches(6), Inches(4), data
    ).chart
    chart.has_title = True
    chart.chart_title.text_frame.text = "Clicks per quarter"
    deck.save(str(path))
    return path


def test_pptx(tmp_path: Path) -> None:
    converted = to_markdown(_pptx(tmp_path / "deck.pptx", tmp_path))
    md = converted.markdown
    assert converted.format == "pptx"
    assert f"## Slide 1: Roadmap Zürich\n\n- first point {CJK}\n  - sub point\n" in md
    assert "### Notes\n\nSpeaker note: mention the falcons." in md
    assert "## Slide 2: Numbers" in md
    assert "| City | Clicks |\n| --- | --- |\n| Zürich | 42 |\n| 北京 | 7 |" in md
    assert SENTENCE in md
    assert "## Slide 3: Trend" in md
    assert "Chart: Clicks per quarter" in md and "| Q1 | 10 |" in md and "| Q2 | 20 |" in md
    assert md.index("Slide 1") < md.index("Slide 2") < md.index("Slide 3")
    assert any("picture" in note for note in converted.notes)


# -- Excel ------------------------------------------------------------------------------------------------------


def _xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["City", "Clicks", "Share", "Since", "Active"])
    sales.append(["Zürich", 42, 0.25, dt.date(2024, 5, 1), True])
    sales.append([CJK, 7, 0.5, dt.datetime(2024, 6, 2, 13, 30), False])
    sales.append([SENTENCE, None, None, None, None])
    notes = book.create_sheet("Notes ü")
    notes["A1"] = "Remark"
    notes["A2"] = "pipes | inside"
    book.create_sheet("Empty")
    book.save(path)
    return path


def test_xlsx(tmp_path: Path) -> None:
    converted = to_markdown(_xlsx(tmp_path / "book.xlsx"))
    md = converted.markdown
    assert converted.format == "xlsx"
    assert "## Sheet: Sales\n\n| City | Clicks | Share | Since | Active |\n| --- | --- | --- | --- | --- |\n" in md
    assert "| Zürich | 42 | 0.25 | 2024-05-01 | TRUE |" in md
    assert f"| {CJK} | 7 | 0.5 | 2024-06-02 13:30:00 | FALSE |" in md
    assert f"| {SENTENCE} |  |  |  |  |" in md
    assert "## Sheet: Notes ü\n\n| Remark |\n| --- |\n| pipes \\| inside |" in md
    assert "Sheet: Empty" not in md
    assert "sheet 'Empty' is empty" in converted.notes


def test_xlsx_far_cell_cannot_blow_up(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "near"
    sheet["XFD1048576"] = "far"  # the last cell Excel has: a 16384 x 1048576 used range
    path = tmp_path / "far.xlsx"
    book.save(path)
    started = time.monotonic()
    converted = to_markdown(path, limits=Limits(max_cells=50_000))
    assert time.monotonic() - started < 10
    assert "| near |" in converted.markdown
    assert any("cut off" in note for note in converted.notes)


def test_xls(tmp_path: Path) -> None:
    import xlwt

    book = xlwt.Workbook(encoding="utf-8")
    sheet = book.add_sheet("Données")
    for c, value in enumerate(["City", "Clicks", "Since"]):
        sheet.write(0, c, value)
    sheet.write(1, 0, "Zürich")
    sheet.write(1, 1, 42)
    sheet.write(1, 2, dt.date(2024, 5, 1), xlwt.easyxf(num_format_str="YYYY-MM-DD"))
    sheet.write(2, 0, CJK)
    sheet.write(2, 1, 7.5)
    path = tmp_path / "legacy.xls"
    book.save(str(path))
    converted = to_markdown(path)
    assert converted.format == "xls"
    assert "## Sheet: Données\n\n| City | Clicks | Since |\n| --- | --- | --- |\n| Zürich | 42 | 2024-05-01 |" in (
        converted.markdown
    )
    assert f"| {CJK} | 7.5 |  |" in converted.markdown
    # the same bytes under a wrong name are still read as Excel
    assert to_markdown_bytes(path.read_bytes(), "renamed.doc").format == "xls"


# -- CSV --------------------------------------------------------------------------------------------------------


def test_csv(tmp_path: Path) -> None:
    path = tmp_path / "clicks.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["City", "Clicks", "Remark"])
        writer.writerow(["Zürich", "42", SENTENCE])
        writer.writerow([CJK, "7", "a, b | c"])
        writer.writerow(["multi", "1", "line one\nline two"])
    converted = to_markdown(path)
    assert converted.format == "csv"
    assert converted.markdown == (
        "| City | Clicks | Remark |\n| --- | --- | --- |\n"
        f"| Zürich | 42 | {SENTENCE} |\n| {CJK} | 7 | a, b \\| c |\n| multi | 1 | line one<br>line two |\n"
    )


def test_semicolon_csv_and_tsv(tmp_path: Path) -> None:
    semicolons = tmp_path / "eu.csv"
    semicolons.write_text("Stadt;Klicks\nZürich;42\nBern;7\n", encoding="utf-8-sig")
    assert "| Stadt | Klicks |\n| --- | --- |\n| Zürich | 42 |" in to_markdown(semicolons).markdown
    tabs = tmp_path / "t.tsv"
    tabs.write_text("a\tb\n1,5\t2\n", encoding="utf-8")
    assert to_markdown(tabs).markdown == "| a | b |\n| --- | --- |\n| 1,5 | 2 |\n"


# -- OpenDocument -----------------------------------------------------------------------------------------------


def _odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, ListLevelStyleBullet, ListLevelStyleNumber, ListStyle, P, S

    doc = OpenDocumentText()
    bullets = ListStyle(name="Bullets")
    bullets.addElement(ListLevelStyleBullet(level=1, bulletchar="•"))
    bullets.addElement(ListLevelStyleBullet(level=2, bulletchar="◦"))
    numbers = ListStyle(name="Numbers")
    numbers.addElement(ListLevelStyleNumber(level=1, numformat="1"))
    doc.automaticstyles.addElement(bullets)
    doc.automaticstyles.addElement(numbers)

    doc.text.addElement(H(outlinelevel=1, text="Quarterly Report"))
    paragraph = P(text="The falcon migration")
    paragraph.addElement(S(c=1))
    paragraph.addText("reached Zürich on Tuesday.")
    doc.text.addElement(paragraph)
    doc.text.addElement(H(outlinelevel=2, text=f"Details {CJK}"))
    outer = List(stylename=bullets)
    first = ListItem()
    first.addElement(P(text="first bullet"))
    inner = List()
    nested = ListItem()
    nested.addElement(P(text="nested bullet"))
    inner.addElement(nested)
    first.addElement(inner)
    outer.addElement(first)
    second = ListItem()
    second.addElement(P(text="second bullet"))
    outer.addElement(second)
    doc.text.addElement(outer)
    steps = List(stylename=numbers)
    for text in ("step one", "step two"):
        item = ListItem()
        item.addElement(P(text=text))
        steps.addElement(item)
    doc.text.addElement(steps)
    table = Table(name="Clicks")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    for row in (("City", "Clicks"), ("Zürich", "42"), ("北京", "7|8")):
        tr = TableRow()
        for value in row:
            cell = TableCell()
            cell.addElement(P(text=value))
            tr.addElement(cell)
        table.addElement(tr)
    doc.text.addElement(table)
    doc.save(str(path))
    return path


def test_odt(tmp_path: Path) -> None:
    converted = to_markdown(_odt(tmp_path / "report.odt"))
    md = converted.markdown
    assert converted.format == "odt"
    assert md.startswith("# Quarterly Report\n\nThe falcon migration reached Zürich on Tuesday.\n")
    assert f"## Details {CJK}\n" in md
    assert "- first bullet\n  - nested bullet\n- second bullet\n" in md
    assert "1. step one\n1. step two\n" in md
    assert "| City | Clicks |\n| --- | --- |\n| Zürich | 42 |\n| 北京 | 7\\|8 |" in md


def test_odt_without_extension_is_detected(tmp_path: Path) -> None:
    path = _odt(tmp_path / "report.odt").rename(tmp_path / "report")
    converted = to_markdown(path)
    assert converted.format == "odt" and SENTENCE in converted.markdown


def test_ods(tmp_path: Path) -> None:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    def cell(value: str = "", repeat: int = 1) -> TableCell:
        tc = TableCell(numbercolumnsrepeated=repeat) if repeat > 1 else TableCell()
        if value:
            tc.addElement(P(text=value))
        return tc

    doc = OpenDocumentSpreadsheet()
    sheet = Table(name="Clicks ü")
    for values in (("City", "Clicks"), ("Zürich", "42"), (CJK, "7")):
        row = TableRow()
        for value in values:
            row.addElement(cell(value))
        row.addElement(cell(repeat=16382))  # what office suites write for the unused columns
        sheet.addElement(row)
    repeated = TableRow(numberrowsrepeated=3)
    repeated.addElement(cell("same"))
    repeated.addElement(cell("row"))
    sheet.addElement(repeated)
    blank = TableRow(numberrowsrepeated=1048570)
    blank.addElement(cell(repeat=16384))
    sheet.addElement(blank)
    doc.spreadsheet.addElement(sheet)
    other = Table(name="Remarks")
    row = TableRow()
    row.addElement(cell(SENTENCE))
    other.addElement(row)
    doc.spreadsheet.addElement(other)
    path = tmp_path / "book.ods"
    doc.save(str(path))

    started = time.monotonic()
    converted = to_markdown(path)
    assert time.monotonic() - started < 5
    md = converted.markdown
    assert converted.format == "ods"
    assert "## Sheet: Clicks ü\n\n| City | Clicks |\n| --- | --- |\n| Zürich | 42 |\n| 广告点击 | 7 |\n" in md
    assert md.count("| same | row |") == 3
    assert f"## Sheet: Remarks\n\n| {SENTENCE} |\n| --- |" in md


def test_odp(tmp_path: Path) -> None:
    from odf.draw import Frame, Page, TextBox
    from odf.namespaces import PRESENTATIONNS
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout, PageLayoutProperties
    from odf.text import List, ListItem, P

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    layout.addElement(PageLayoutProperties(margin="0cm", pagewidth="28cm", pageheight="21cm"))
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    doc.masterstyles.addElement(master)

    def frame(cls: str, *children: object) -> Frame:
        f = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
        f.setAttrNS(PRESENTATIONNS, "class", cls)
        box = TextBox()
        for child in children:
            box.addElement(child)
        f.addElement(box)
        return f

    for title, body in (("Roadmap Zürich", f"first point {CJK}"), ("Outlook", SENTENCE)):
        page = Page(masterpagename=master, name=title)
        page.addElement(frame("title", P(text=title)))
        outline = List()
        item = ListItem()
        item.addElement(P(text=body))
        outline.addElement(item)
        page.addElement(frame("outline", outline))
        notes = Notes()
        notes.addElement(frame("notes", P(text=f"note for {title}")))
        page.addElement(notes)
        doc.presentation.addElement(page)
    path = tmp_path / "deck.odp"
    doc.save(str(path))

    converted = to_markdown(path)
    md = converted.markdown
    assert converted.format == "odp"
    assert f"## Slide 1: Roadmap Zürich\n\n- first point {CJK}\n\n### Notes\n\nnote for Roadmap Zürich\n" in md
    assert f"## Slide 2: Outlook\n\n- {SENTENCE}\n" in md


# -- RTF --------------------------------------------------------------------------------------------------------

RTF = (
    r"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0\fswiss\fcharset0 Arial;}{\f1\fnil\fcharset134 SimSun;}}"
    "\n"
    r"{\stylesheet{\s1 heading 1;}}"
    r"\pard\s1\b\fs32 Quarterly Report\b0\fs24\par"
    "\n"
    r"\pard The falcon migration reached Z\'fcrich on Tuesday.\par"
    r"\pard Chinese: \uc1\u24191?\u21578?\u28857?\u20987?\par"
    r'\pard{\field{\*\fldinst{HYPERLINK "http://example.org/"}}{\fldrslt{the project page}}}\par'
    r"\trowd\cellx2000\cellx4000 City\cell Clicks\cell\row"
    r"\trowd\cellx2000\cellx4000 Z\u252?rich\cell 42\cell\row"
    r"{\pict\pngblip\picw10\pich10 89504e470d0a1a0a}"
    r"\pard Literal braces \{kept\}.\par}"
)


def test_rtf(tmp_path: Path) -> None:
    path = tmp_path / "letter.rtf"
    path.write_bytes(RTF.encode("ascii"))
    converted = to_markdown(path)
    md = converted.markdown
    assert converted.format == "rtf"
    assert md.startswith("Quarterly Report\n\n")
    assert SENTENCE in md
    assert f"Chinese: {CJK}" in md
    assert "the project page" in md
    assert "| City | Clicks |\n| --- | --- |\n| Zürich | 42 |" in md
    assert "Literal braces {kept}." in md
    assert "89504e47" not in md and "Arial" not in md


def test_rtf_named_txt_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "letter.txt"
    path.write_bytes(RTF.encode("ascii"))
    assert to_markdown(path).format == "rtf"


def test_rtf_crafted_to_backtrack_converts_quickly(tmp_path: Path) -> None:
    # unguarded, striprtf spends ~45 s on the first and minutes on the second
    hyperlinks = "{\\rtf1 visible words " + '{\\field{\\*\\fldinst{ HYPERLINK "x"' * 3000 + " tail}"
    fonts = "{\\rtf1{\\fonttbl " + "\\f1" * 30000 + "}\\pard body text\\par}"
    for name, body in (("links.rtf", hyperlinks), ("fonts.rtf", fonts)):
        path = tmp_path / name
        path.write_text(body, encoding="ascii")
        started = time.monotonic()
        converted = to_markdown(path)
        assert time.monotonic() - started < 5, name
        assert converted.markdown.strip()
    assert "body text" in to_markdown(tmp_path / "fonts.rtf").markdown
    assert "visible words" in to_markdown(tmp_path / "links.rtf").markdown


# -- EPUB -------------------------------------------------------------------------------------------------------


def _epub(path: Path) -> Path:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("falcons-1")
    book.set_title("Falcons")
    book.set_language("en")
    one = epub.EpubHtml(title="One", file_name="text/one.xhtml", lang="en")
    one.content = (
        f"<html><body><h1>Chapter One</h1><p>{SENTENCE}</p><ul><li>first bullet</li><li>{CJK}</li></ul>"
        "<script>alert('no')</script></body></html>"
    )
    two = epub.EpubHtml(title="Two", file_name="text/two.xhtml", lang="en")
    two.content = (
        "<html><body><h1>Chapter Two</h1><h2>Counts</h2><table><tr><th>City</th><th>Clicks</th></tr>"
        "<tr><td>Zürich</td><td>42</td></tr></table></body></html>"
    )
    book.add_item(one)
    book.add_item(two)
    book.toc = (one, two)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = [one, two]
    epub.write_epub(str(path), book)
    return path


def test_epub(tmp_path: Path) -> None:
    converted = to_markdown(_epub(tmp_path / "falcons.epub"))
    md = converted.markdown
    assert converted.format == "epub"
    assert f"# Chapter One\n\n{SENTENCE}\n\n- first bullet\n- {CJK}\n" in md
    assert "# Chapter Two\n\n## Counts\n\n| City | Clicks |\n| --- | --- |\n| Zürich | 42 |" in md
    assert md.index("Chapter One") < md.index("Chapter Two")
    assert "alert" not in md


def test_epub_with_encrypted_chapters_is_refused(tmp_path: Path) -> None:
    good = _epub(tmp_path / "good.epub")
    encryption = (
        b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        b'<enc:CipherData><enc:CipherReference URI="EPUB/text/one.xhtml"/></enc:CipherData>'
        b"</enc:EncryptedData></encryption>"
    )
    bad = _rewrite(good, tmp_path / "drm.epub", {}, add={"META-INF/encryption.xml": encryption})
    _fails(bad, "DRM-protected")


# -- PDF --------------------------------------------------------------------------------------------------------


def _pdf(path: Path) -> Path:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))  # a standard CJK font: nothing to embed
    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 780, "Quarterly Report")
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 750, SENTENCE)
    pdf.setFont("STSong-Light", 12)
    pdf.drawString(72, 730, f"{CJK} 数据")
    pdf.showPage()
    pdf.rect(72, 600, 200, 100, fill=1)  # a page with a picture only
    pdf.showPage()
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 750, "Closing remarks on page three.")
    pdf.save()
    return path


def test_pdf(tmp_path: Path) -> None:
    converted = to_markdown(_pdf(tmp_path / "report.pdf"))
    md = converted.markdown
    assert converted.format == "pdf"
    assert md.startswith(f"## Page 1\n\nQuarterly Report\n{SENTENCE}\n{CJK} 数据\n\n## Page 3\n\nClosing remarks")
    assert "## Page 2" not in md
    assert any(note.startswith("page 2 has no extractable text") for note in converted.notes)


def test_pdf_named_txt_is_detected(tmp_path: Path) -> None:
    path = _pdf(tmp_path / "report.pdf").rename(tmp_path / "report.txt")
    converted = to_markdown(path)
    assert converted.format == "pdf" and SENTENCE in converted.markdown


def test_truncated_pdf(tmp_path: Path) -> None:
    data = _pdf(tmp_path / "report.pdf").read_bytes()
    for cut in (len(data) // 2, 200):
        path = tmp_path / f"cut{cut}.pdf"
        path.write_bytes(data[:cut])
        _fails(path, "cannot read it as PDF", "check that the file is complete")


def test_pdf_with_no_text_points_at_ocr(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    path = tmp_path / "scan.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.rect(72, 600, 200, 100, fill=1)
    pdf.save()
    _fails(path, "no extractable text", "OCR")


def _encrypted(source: Path, target: Path, user: str) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password=user, owner_password="owner-secret", algorithm="AES-256")
    writer.write(target)
    return target


def test_pdf_with_only_an_owner_password_opens(tmp_path: Path) -> None:
    path = _encrypted(_pdf(tmp_path / "report.pdf"), tmp_path / "restricted.pdf", user="")
    assert SENTENCE in to_markdown(path).markdown


def test_pdf_with_a_user_password_is_refused(tmp_path: Path) -> None:
    path = _encrypted(_pdf(tmp_path / "report.pdf"), tmp_path / "locked.pdf", user="open-sesame")
    _fails(path, "password-protected")


# -- the API across formats -------------------------------------------------------------------------------------


def test_bytes_and_path_give_the_same_result(tmp_path: Path) -> None:
    path = _xlsx(tmp_path / "book.xlsx")
    from_path = to_markdown(path)
    from_bytes = to_markdown_bytes(path.read_bytes(), "book.xlsx")
    assert isinstance(from_bytes, Converted)
    assert from_bytes == from_path


def test_empty_file_of_each_kind(tmp_path: Path) -> None:
    for name in ("empty.docx", "empty.pdf", "empty.txt", "empty"):
        path = tmp_path / name
        path.write_bytes(b"")
        _fails(path, "empty (0 bytes)")


def test_an_office_file_with_no_text(tmp_path: Path) -> None:
    import docx

    path = tmp_path / "blank.docx"
    docx.Document().save(str(path))
    _fails(path, "has no text to convert")


def test_a_plain_zip_is_not_a_document(tmp_path: Path) -> None:
    path = tmp_path / "photos.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.txt", "hello")
    _fails(path, "a ZIP archive that is not a docx")


def test_a_saved_web_page_keeps_its_content_and_drops_the_furniture(tmp_path: Path) -> None:
    page = tmp_path / "page.htm"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>T</title><script>alert(1)</script></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/about'>About menu</a></nav>"
        "<h1>Zürich notes</h1><p>The <b>distinctive sentence</b> about 广告点击.</p>"
        "<ul><li>first</li><li>second</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "<img src='x.png' alt='a chart'><footer>Copyright footer text</footer></body></html>",
        encoding="utf-8",
    )
    converted = to_markdown(page)
    assert converted.format == "html"
    md = converted.markdown
    assert "# Zürich notes" in md and "**distinctive sentence**" in md and "广告点击" in md
    assert "- first" in md and "| a | b |" in md and "[image: a chart]" in md
    assert "About menu" not in md and "Copyright footer" not in md and "alert(1)" not in md
    assert converted.notes == ["1 image(s) left out (only their alt text is kept)"]
    renamed = tmp_path / "page.txt"  # the content says HTML, whatever the name says
    renamed.write_bytes(page.read_bytes())
    assert to_markdown(renamed).format == "html"
