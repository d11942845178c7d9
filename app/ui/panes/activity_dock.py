"""The Activity dock: what agents did to the memory, live.

A table of the calls that came through the MCP server, the HTTP API and the command
line (newest first, filterable by client and tool), read from the store's activity log.
When another process writes, the session announces it (SQLite's data version) and the
dock reads only the rows after the last one it has seen. Picking a call rings its
memories on the map; a recall or compile can be replayed in the prompt preview; a
memory an agent forgot can be restored (an undoable step). Browsing writes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mnemoscope.store.agents import activity
from mnemoscope.store.agents.activity import ActivityEntry, Forgotten
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QStyle,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ..commands.memories import RestoreForgottenCommand
from ..session import StoreSession
from ..theme import REFUSED_COLOUR
from ..widgets import ElidedLabel, RowsModel, StillTabs

# The summary comes last and takes what width is left, so a narrow dock cuts only it.
COLUMNS = ("time", "client", "door", "tool", "scope", "memories", "duration", "outcome", "summary")
# Each column is as wide as its widest usual text (a time of another day shows its date); client,
# tool, scope and memories elide.
SAMPLES = {"time": "12-31 00:00", "client": "Claude Desktop", "door": "http", "tool": "remember", "scope": "group:team",
           "memories": "mem-000 +9", "duration": "0000 ms", "outcome": "✗ refused"}
# Dropped first when the dock is narrow (the row's tooltip still says them).
OPTIONAL = ("door", "duration")
MIN_SUMMARY = 220
ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
MAX_ROWS = 500
WRITING_TOOLS = frozenset({"remember", "update", "capture"})
REPLAYABLE = {"recall": "query", "compile_prompt": "user_message"}
ALL = "all"


def _when(at: float, today: str) -> str:
    moment = datetime.fromtimestamp(at)
    return moment.strftime("%H:%M:%S") if moment.strftime("%Y-%m-%d") == today else moment.strftime("%m-%d %H:%M")


class ActivityModel(RowsModel):
    """The activity log's newest ``MAX_ROWS`` calls (of one client or tool, when filtered)."""

    columns = COLUMNS

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__(parent)
        self.session = session
        self.client: str | None = None
        self.tool: str | None = None
        self.last_id = 0  # the newest row seen, whatever the filter
        self.rows: list[ActivityEntry] = []
        self._texts: dict[str, str] | None = None

    # -- reading the log ------------------------------------------------------------------
    def reload(self) -> None:
        """Read the newest rows again (a new database or a new filter)."""
        store = self.session.store
        self.beginResetModel()
        self._texts = None
        if store is None:
            self.rows, self.last_id = [], 0
        else:
            newest = activity.recent(store, 1)
            self.last_id = newest[0].id if newest else 0
            rows = activity.recent(store, MAX_ROWS, client=self.client, tool=self.tool)
            self.rows = [e for e in rows if e.id <= self.last_id]  # later ones come with fetch_newer
        self.endResetModel()

    def fetch_newer(self) -> list[ActivityEntry]:
        """Read the rows written since the last look (all of them, newest first) and show
        those that pass the filter at the top."""
        store = self.session.store
        self._texts = None
        if store is None:
            return []
        new = activity.recent(store, MAX_ROWS, after_id=self.last_id)
        if not new:
            return []
        self.last_id = new[0].id
        shown = [e for e in new if self.accepts(e)]
        if shown:
            self.beginInsertRows(QModelIndex(), 0, len(shown) - 1)
            self.rows[:0] = shown
            self.endInsertRows()
        if len(self.rows) > MAX_ROWS:
            self.beginRemoveRows(QModelIndex(), MAX_ROWS, len(self.rows) - 1)
            del self.rows[MAX_ROWS:]
            self.endRemoveRows()
        return new

    def accepts(self, entry: ActivityEntry) -> bool:
        return (self.client is None or entry.client == self.client) and (self.tool is None or entry.tool == self.tool)

    def set_filter(self, client: str | None, tool: str | None) -> None:
        if (client, tool) != (self.client, self.tool):
            self.client, self.tool = client, tool
            self.reload()

    def entry(self, row: int) -> ActivityEntry:
        return self.rows[row]

    def row_of(self, entry_id: int) -> int:
        return next((i for i, e in enumerate(self.rows) if e.id == entry_id), -1)

    def _memory_text(self, memory_id: str) -> str:
        if self._texts is None:
            self._texts = {m.id: m.text for m in self.session.memories()}
        return self._texts.get(memory_id, "(not stored now)")

    # -- the Qt model ---------------------------------------------------------------------
    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self.rows)):
            return None
        e = self.rows[index.row()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(e, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(e, column)
        if role == ENTRY_ROLE:
            return e
        if role == Qt.ItemDataRole.ForegroundRole and not e.ok:
            return QColor(REFUSED_COLOUR)
        if role == Qt.ItemDataRole.TextAlignmentRole and column == "duration":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _display(self, e: ActivityEntry, column: str) -> str:
        if column == "time":
            return _when(e.when, datetime.now().strftime("%Y-%m-%d"))
        if column == "memories":
            if not e.memory_ids:
                return ""
            more = len(e.memory_ids) - 1
            return e.memory_ids[0] + (f" +{more}" if more else "")
        if column == "duration":
            return f"{e.duration_ms:.0f} ms" if e.duration_ms >= 10 else f"{e.duration_ms:.1f} ms"
        if column == "outcome":
            return "ok" if e.ok else "✗ refused"
        return str(getattr(e, column))

    def _tooltip(self, e: ActivityEntry, column: str) -> str:
        if column == "time":
            said = datetime.fromtimestamp(e.when).strftime("%Y-%m-%d %H:%M:%S")
            if e.called_at is not None and abs(e.at - e.called_at) >= 60:  # the store's clock was moved
                said += f"\n(the store's clock: {datetime.fromtimestamp(e.at).strftime('%Y-%m-%d %H:%M')})"
            return said
        if column == "memories":
            return "\n".join(f"{mid}: {_cut(self._memory_text(mid), 100)}" for mid in e.memory_ids)
        if column == "outcome" and not e.ok:
            return e.error
        text = f"{e.tool} by {e.client} ({e.door}), {self._display(e, 'duration')}"
        if e.summary:
            text += f"\n{e.summary}"
        if not e.ok:
            text += f"\nrefused: {e.error}"
        return text


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ActivityDock(QDockWidget):
    """The dock around :class:`ActivityModel`, with the forgotten memories beside it."""

    call_picked = Signal(object)    # the picked call's memory ids (list; empty: none)
    memories_arrived = Signal(object)  # ids an agent wrote since the window opened (list)
    replay_requested = Signal(object)  # keyword arguments for PromptPreview.replay (dict)

    def __init__(self, session: StoreSession, parent=None) -> None:
        super().__init__("Activity", parent)
        self.setObjectName("activity_dock")
        self.session = session
        self.model = ActivityModel(session, self)
        self.forgotten: list[Forgotten] = []
        self.message = ""
        self._build()
        session.store_replaced.connect(self._store_replaced)
        session.changed.connect(lambda _ids: self.refresh())

    # -- construction ---------------------------------------------------------------------
    def _build(self) -> None:
        body = QWidget(self)
        self.client_box = QComboBox(body)
        self.client_box.setToolTip("Show the calls of one client")
        self.client_box.setMinimumContentsLength(9)
        self.tool_box = QComboBox(body)
        self.tool_box.setToolTip("Show the calls of one tool")
        self.tool_box.setMinimumContentsLength(8)
        for box in (self.client_box, self.tool_box):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.currentIndexChanged.connect(self._filter_changed)
        self.replay_button = QPushButton("Replay", body)
        self.replay_button.setToolTip("Replay this call in the prompt preview: its query and scope as the inputs")
        self.replay_button.clicked.connect(self.replay)
        self.restore_button = QPushButton("Restore", body)
        self.restore_button.setToolTip("Bring back the memory this call forgot (Undo forgets it again)")
        self.restore_button.clicked.connect(lambda: self.restore(self._restorable_of_call()))
        # a line of its own under the filters, shown while it has something to say
        self.status = ElidedLabel("", body)
        self.status.setObjectName("activity_status")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Client", body))
        top.addWidget(self.client_box, 1)
        top.addWidget(QLabel("Tool", body))
        top.addWidget(self.tool_box, 1)
        top.addStretch(1)
        # the call's buttons beside the Calls and Forgotten tabs, whose row has room: the
        # filters' row then fits a narrow strip under the map
        actions = QWidget(body)
        buttons = QHBoxLayout(actions)
        buttons.setContentsMargins(0, 0, 0, 2)
        buttons.addWidget(self.replay_button)
        buttons.addWidget(self.restore_button)

        self.view = QTableView(body)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setWordWrap(False)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        header = self.view.horizontalHeader()
        header.setMinimumSectionSize(30)
        self.widths = {name: self._width_for(sample) for name, sample in SAMPLES.items()}
        for i, name in enumerate(COLUMNS):
            if name == "summary":
                header.setSectionResizeMode(i, QHeaderView.ResizeMode.Stretch)
            else:
                header.resizeSection(i, self.widths[name])
        self.view.selectionModel().currentRowChanged.connect(lambda current, _prev: self._call_changed(current))

        self.forgotten_list = QListWidget(body)
        self.forgotten_list.setWordWrap(False)
        self.forgotten_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.forgotten_list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.restore_forgotten_button = QPushButton("Restore", body)
        self.restore_forgotten_button.setToolTip("Bring the selected memory back (Undo forgets it again)")
        self.restore_forgotten_button.clicked.connect(lambda: self.restore(self._picked_forgotten()))
        forgotten_page = QWidget(body)
        column = QVBoxLayout(forgotten_page)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(QLabel("Memories agents forgot that can still be restored:", forgotten_page))
        column.addWidget(self.forgotten_list, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.restore_forgotten_button)
        column.addLayout(row)

        self.tabs = StillTabs(body)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.view, "Calls")
        self.tabs.addTab(forgotten_page, "Forgotten")
        self.tabs.setCornerWidget(actions, Qt.Corner.TopRightCorner)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 2, 4, 4)
        layout.setSpacing(3)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.tabs, 1)
        self.setWidget(body)
        self._update_buttons()

    def _width_for(self, sample: str) -> int:
        """A column as wide as the view's own delegate asks for ``sample`` (its font and the
        style's cell margins), so the usual text of the column is never cut."""
        metrics = self.view.fontMetrics()
        widest_digit = max("0123456789", key=metrics.horizontalAdvance)
        sample = "".join(widest_digit if c.isdigit() else c for c in sample)
        option = QStyleOptionViewItem()
        option.initFrom(self.view)
        option.font = self.view.font()
        option.text = sample
        option.features |= QStyleOptionViewItem.ViewItemFeature.HasDisplay
        hint = self.view.style().sizeFromContents(QStyle.ContentsType.CT_ItemViewItem, option, QSize(), self.view)
        return max(hint.width(), metrics.horizontalAdvance(sample)) + 8

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        fixed = sum(self.widths.values())
        narrow = self.view.viewport().width() < fixed + MIN_SUMMARY
        for name in OPTIONAL:
            self.view.setColumnHidden(COLUMNS.index(name), narrow)

    # -- reading --------------------------------------------------------------------------
    def _store_replaced(self) -> None:
        self._fill_filters()
        self.model.reload()
        self._read_forgotten()
        self._update_buttons()

    def refresh(self) -> None:
        """Show the calls written since the last look; mark the memories agents wrote."""
        new = self.model.fetch_newer()
        if new:
            clients, tools = self._filter_values()
            if any(e.client not in clients or e.tool not in tools for e in new):
                self._fill_filters()
            written = [mid for e in reversed(new) if e.ok and e.tool in WRITING_TOOLS for mid in e.memory_ids]
            if written:
                self.memories_arrived.emit(written)
        self._read_forgotten()
        self._update_buttons()

    def _read_forgotten(self) -> None:
        store = self.session.store
        found = activity.forgotten(store) if store is not None else []
        if found == self.forgotten:
            return
        picked = self._picked_forgotten()
        self.forgotten = found
        self.forgotten_list.clear()
        for f in found:
            item = QListWidgetItem(f"{f.memory_id} · {_cut(f.text, 140)}")
            item.setData(Qt.ItemDataRole.UserRole, f.memory_id)
            when = datetime.fromtimestamp(f.at).strftime("%Y-%m-%d %H:%M")
            item.setToolTip(f"{f.text}\n\nforgotten {when} by {f.client or 'an agent'}")
            self.forgotten_list.addItem(item)
            if picked is not None and f.memory_id == picked.memory_id:
                self.forgotten_list.setCurrentItem(item)
        self.tabs.setTabText(1, f"Forgotten ({len(found)})" if found else "Forgotten")

    # -- filters --------------------------------------------------------------------------
    def _filter_values(self) -> tuple[set[str], set[str]]:
        return ({self.client_box.itemData(i) for i in range(1, self.client_box.count())},
                {self.tool_box.itemData(i) for i in range(1, self.tool_box.count())})

    def _fill_filters(self) -> None:
        store = self.session.store
        clients, tools = activity.clients_and_tools(store) if store is not None else ([], [])
        for box, values, label in ((self.client_box, clients, "all clients"), (self.tool_box, tools, "all tools")):
            current = box.currentData()
            box.blockSignals(True)
            box.clear()
            box.addItem(label, None)
            for value in values:
                box.addItem(value, value)
            box.setCurrentIndex(max(box.findData(current), 0) if current is not None else 0)
            box.blockSignals(False)

    def set_filter(self, client: str | None = None, tool: str | None = None) -> None:
        """Show only one client's or one tool's calls (None: all)."""
        for box, value in ((self.client_box, client), (self.tool_box, tool)):
            index = box.findData(value) if value is not None else 0
            if index < 0:  # not seen yet: offer it anyway, the list fills as calls come
                box.addItem(value, value)
                index = box.count() - 1
            box.setCurrentIndex(index)
        self._filter_changed()

    def _filter_changed(self, *_args) -> None:
        self.model.set_filter(self.client_box.currentData(), self.tool_box.currentData())
        self._update_buttons()

    # -- the picked call ------------------------------------------------------------------
    def current_entry(self) -> ActivityEntry | None:
        index = self.view.currentIndex()
        return self.model.entry(index.row()) if index.isValid() else None

    def select_entry(self, entry_id: int) -> bool:
        row = self.model.row_of(entry_id)
        if row < 0:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def _call_changed(self, current: QModelIndex) -> None:
        entry = self.model.entry(current.row()) if current.isValid() else None
        ids = list(entry.memory_ids) if entry else []
        self.call_picked.emit(ids)
        stored = {m.id for m in self.session.memories()}
        first = next((mid for mid in ids if mid in stored), None)
        if first is not None:
            self.session.select(first)
        self._update_buttons()

    def replay_arguments(self, entry: ActivityEntry) -> dict[str, Any] | None:
        """What a recall or compile call asked, as PromptPreview.replay's arguments."""
        key = REPLAYABLE.get(entry.tool)
        args = entry.args
        if key is None or not isinstance(args.get(key), str) or not args[key]:
            return None
        out: dict[str, Any] = {"user_message": args[key], "scope": entry.scope or args.get("scope") or "global"}
        if entry.trust:
            out["trust"] = entry.trust
        for name, target in (("k", "k"), ("max_tokens", "budget")):
            if isinstance(args.get(name), int):
                out[target] = args[name]
        if isinstance(args.get("model"), str):
            out["model"] = args["model"]
        return out

    def replay(self) -> None:
        entry = self.current_entry()
        arguments = self.replay_arguments(entry) if entry else None
        if arguments is None:
            return
        self.replay_requested.emit(arguments)
        cut = arguments["user_message"].endswith("…") and len(arguments["user_message"]) >= activity.ARG_CHARS
        self._say("Replayed in the preview" + (f" (the log keeps the first {activity.ARG_CHARS:,} characters "
                                               "of the message)" if cut else ""))

    # -- restoring ------------------------------------------------------------------------
    def _restorable_of_call(self) -> Forgotten | None:
        entry = self.current_entry()
        if entry is None or entry.tool != "forget" or not entry.ok:
            return None
        return next((f for f in self.forgotten if f.memory_id in entry.memory_ids), None)

    def _picked_forgotten(self) -> Forgotten | None:
        item = self.forgotten_list.currentItem()
        if item is None:
            return None
        mid = item.data(Qt.ItemDataRole.UserRole)
        return next((f for f in self.forgotten if f.memory_id == mid), None)

    def restore(self, forgotten: Forgotten | None) -> bool:
        """Restore a forgotten memory as one undoable step; False (and a message) if it failed."""
        if forgotten is None or not self.session.writable:
            return False
        command = RestoreForgottenCommand(self.session, forgotten)
        try:
            self.session.push(command)
        except Exception:  # the command holds the error; it is said next to the list
            self._say(f"Cannot restore {forgotten.memory_id}: {command.error}", error=True)
            self._read_forgotten()
            return False
        self._say(f"Restored {forgotten.memory_id}; Undo forgets it again")
        return True

    # -- showing --------------------------------------------------------------------------
    def _say(self, text: str, error: bool = False) -> None:
        self.message = text
        self._show_status(text)
        self.status.setStyleSheet(f"color: {REFUSED_COLOUR}" if error else "")

    def _show_status(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def _update_buttons(self) -> None:
        if not self.message:
            empty = self.model.rowCount() == 0
            hint = (("No calls of this client or tool yet" if self.model.client or self.model.tool else
                     "No agent calls yet: connect one with 'mnemoscope mcp'") if empty else "")
            self._show_status(hint)
        entry = self.current_entry()
        self.replay_button.setEnabled(entry is not None and self.replay_arguments(entry) is not None)
        writable = self.session.writable
        self.restore_button.setEnabled(writable and self._restorable_of_call() is not None)
        self.restore_forgotten_button.setEnabled(writable and self._picked_forgotten() is not None)
