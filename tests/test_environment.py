"""Environment.call validates, runs in a savepoint, keeps a canonical hash; forks are independent."""

from __future__ import annotations

import sqlite3

from toolscale.domains import Environment, replay


def an_active_member_and_a_book(env):
    rows = env.dump()
    member = next(m for m in rows["members"] if m["status"] == "active")
    book = next(b for b in rows["books"] if b["copies"] > 0)
    return member, book


def test_unknown_tool_and_bad_arguments_are_errors_not_crashes(library_env):
    assert library_env.call("fly_to_moon", {}).error_type == "UnknownTool"
    missing = library_env.call("borrow_book", {"member_id": "MEM-000001"})
    assert missing.error_type == "InvalidArguments" and "book_id" in missing.error
    extra = library_env.call("find_member", {"email": "a@b.c", "admin": True})
    assert extra.error_type == "InvalidArguments" and "admin" in extra.error
    wrong_type = library_env.call("set_copies", {"book_id": "BK-000001", "copies": "many"})
    assert wrong_type.error_type == "InvalidArguments" and "copies" in wrong_type.error
    bad_enum = library_env.call("set_copies", {"book_id": "BK-000001", "copies": 1, "reason": "theft"})
    assert bad_enum.error_type == "InvalidArguments"


def test_a_failed_call_leaves_no_trace(library_env):
    before_hash, before_rows = library_env.state_hash(), library_env.dump()
    result = library_env.call("set_copies", {"book_id": "BK-000002", "copies": 3, "note": "fail"})
    assert result.error_type == "ToolError" and result.error == "asked to fail after writing"
    assert library_env.state_hash() == before_hash
    assert library_env.dump() == before_rows


def test_read_tools_cannot_write(library_env):
    before = library_env.state_hash()
    result = library_env.call("sneaky_write", {"book_id": "BK-000001"})
    assert result.error_type == "PermissionError"
    assert library_env.state_hash() == before


def test_a_write_changes_the_hash_and_matches_a_full_recompute(library_env):
    member, book = an_active_member_and_a_book(library_env)
    before = library_env.state_hash()
    loan = library_env.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]})
    assert loan.ok, loan.error
    assert library_env.state_hash() != before
    assert library_env.state_hash() == library_env.recomputed_state_hash()
    assert loan.output["due_on"] == "2026-03-16"


def test_new_ids_are_deterministic(library_env):
    member, book = an_active_member_and_a_book(library_env)
    expected = f"LN-{len(library_env.dump()['loans']) + 1:06d}"
    ids = []
    for _ in range(2):
        with library_env.fork() as fork:
            ids.append(fork.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).output["loan_id"])
    assert ids == [expected, expected]


def test_forks_are_independent_copies(library_env):
    member, book = an_active_member_and_a_book(library_env)
    original = library_env.state_hash()
    with library_env.fork() as first, library_env.fork() as second:
        assert first.state_hash() == second.state_hash() == original
        assert first.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).ok
        assert first.state_hash() != original
        assert second.state_hash() == original == second.recomputed_state_hash()
    assert library_env.state_hash() == original


def test_same_calls_give_the_same_state(library_env):
    member, book = an_active_member_and_a_book(library_env)
    calls = [("find_member", {"email": member["email"]}),
             ("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]})]
    runs = []
    for _ in range(2):
        with library_env.fork() as fork:
            runs.append(([r.output for r in replay(fork, calls)], fork.state_hash()))
    assert runs[0] == runs[1]


def test_replay_stops_at_the_first_error(library_env):
    results = replay(library_env, [("find_member", {"email": "nobody@x"}), ("search_books", {"title": "a"})])
    assert len(results) == 1 and results[0].error_type == "ToolError"


def test_save_and_reload_round_trip(library_env, library, tmp_path):
    path = tmp_path / "db.sqlite"
    library_env.save(path)
    assert sqlite3.connect(path).execute("select count(*) from books").fetchone()[0] == 20
    with Environment.from_sqlite(library, path) as again:
        assert again.state_hash() == library_env.state_hash()
        assert again.dump() == library_env.dump()


def test_any_sqlalchemy_url_works_and_forks_fall_back_to_copies(library, library_rows, tmp_path):
    url = f"sqlite:///{tmp_path / 'file.db'}"
    with Environment.from_rows(library, library_rows, url=url) as env, \
            Environment.from_rows(library, library_rows) as memory:
        assert env.state_hash() == memory.state_hash()
        with env.fork() as fork:
            assert fork.state_hash() == env.state_hash()


def test_find_filters_orders_and_limits(library_env):
    records = library_env._records
    books = records.find("books", order_by="-copies")
    assert [b["copies"] for b in books] == sorted((b["copies"] for b in books), reverse=True)
    assert records.find("books", order_by="-copies", limit=2) == books[:2]
    active = records.find("members", {"status": "active"})
    assert active and all(m["status"] == "active" for m in active)
    assert records.count("members", {"status": "active"}) == len(active)


def test_database_refusals_come_back_as_tool_errors(library_env):
    records = library_env._records
    taken = library_env.dump()["members"][0]["email"]
    import pytest
    from toolscale.domains import ToolError
    with pytest.raises(ToolError, match=r"members.email .* is already taken"):
        records.insert("members", {"name": "Twin", "email": taken, "status": "active"})
    with pytest.raises(ToolError, match=r"loans.book_id: no books record with id 'BK-999999'"):
        records.insert("loans", {"member_id": "MEM-000001", "book_id": "BK-999999", "due_on": "2026-03-09",
                                 "returned": False})
    referenced = library_env.dump()["loans"][0]["member_id"]
    with pytest.raises(ToolError, match="still referenced by loans"):
        records.delete("members", referenced)


def test_a_closed_fork_leaves_nothing_behind_for_the_next(library_env, tmp_path):
    member, book = an_active_member_and_a_book(library_env)
    original = library_env.state_hash()
    for _ in range(3):
        with library_env.fork() as fork:
            assert fork.state_hash() == fork.recomputed_state_hash() == original
            assert fork.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).ok
            with fork.fork() as grandchild:
                assert grandchild.state_hash() == fork.state_hash() == grandchild.recomputed_state_hash()
            fork.save(tmp_path / "fork.sqlite")
    with library_env.fork() as fresh:
        assert fresh.dump() == library_env.dump()


def test_forks_see_writes_made_to_their_parent(library_env):
    member, book = an_active_member_and_a_book(library_env)
    with library_env.fork() as before:
        pass
    assert library_env.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).ok
    with library_env.fork() as after:
        assert after.state_hash() == library_env.state_hash() == after.recomputed_state_hash()


def test_whole_table_reads_shared_by_sibling_forks_show_each_its_own_writes(library_env):
    """Forks of one state share their whole-table reads (sql.SharedReads): a fork that wrote to a table
    reads it from SQL again, its siblings keep the state they forked from, and a tool that edits a
    row it read edits its own copy."""
    member, book = an_active_member_and_a_book(library_env)
    title = {"title": book["title"]}
    copies = lambda result: next(b["copies"] for b in result.output if b["book_id"] == book["book_id"])  # noqa: E731
    with library_env.fork() as writer, library_env.fork() as sibling:
        assert copies(writer.call("search_books", title)) == copies(sibling.call("search_books", title)) == book["copies"]
        assert writer.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).ok
        assert copies(writer.call("search_books", title)) == book["copies"] - 1
        assert writer.dump() != sibling.dump() and writer.recomputed_state_hash() == writer.state_hash()
        for row in sibling._records.find("books"):
            row["copies"] = 999
        assert copies(sibling.call("search_books", title)) == book["copies"]
        assert sibling._records.find("books", limit=2) == library_env.dump()["books"][:2]
    with library_env.fork() as later:
        assert later.dump() == library_env.dump()


def test_forks_share_the_largest_keys_of_their_state_and_a_fork_that_wrote_finds_its_own(library_env):
    """A fork's first new key comes from the largest key of the state it forked from, found once for
    all its siblings (sql.SharedReads); after the fork writes to the table, from its own rows."""
    member, book = an_active_member_and_a_book(library_env)
    top = max(r["loan_id"] for r in library_env.dump()["loans"])
    following = f"LN-{int(top[3:]) + 1:06d}"
    with library_env.fork() as reader, library_env.fork() as writer, library_env.fork() as borrower:
        assert reader._records.next_key("loans") == following
        writer._records.insert("loans", {"loan_id": "LN-900000", "member_id": member["member_id"],
                                         "book_id": book["book_id"], "due_on": "2026-03-01", "returned": False})
        assert writer._records.next_key("loans") == "LN-900001"
        assert borrower.call("borrow_book", {"member_id": member["member_id"], "book_id": book["book_id"]}).ok
        assert borrower.dump()["loans"][-1]["loan_id"] == following
    with library_env.fork() as later:
        assert later._records.next_key("loans") == following


def test_a_saved_database_has_the_same_bytes_whatever_objects_made_it(tmp_path):
    """SQLAlchemy would create a table's indexes in set order, which varies between MetaData
    objects; create_schema makes them in name order, so a saved file depends on its rows only."""
    from toolscale.domains import available_domains
    from toolscale.domains.domain import BUILTIN_DIR, load_domain
    from toolscale.pipeline.populate import populate

    for name in available_domains():
        folder = BUILTIN_DIR / name
        rows = populate(load_domain(folder).spec, seed=1)
        saved = []
        for i in range(3):  # fresh Domain objects, hence fresh MetaData, each time
            with Environment.from_rows(load_domain(folder), rows) as env:
                env.save(tmp_path / f"{name}-{i}.sqlite")
            saved.append((tmp_path / f"{name}-{i}.sqlite").read_bytes())
        assert saved[0] == saved[1] == saved[2], name
        with sqlite3.connect(tmp_path / f"{name}-0.sqlite") as conn:
            indexes = conn.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            by_table: dict[str, list[str]] = {}
            for table, index in indexes:
                by_table.setdefault(table, []).append(index)
        assert by_table and all(names == sorted(names) for names in by_table.values()), name
