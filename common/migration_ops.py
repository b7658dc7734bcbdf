"""Operations shared by migrations (kept stable: migrations import them)."""

from django.db import migrations


def foreign_key_index_dropped(
    *, state_operation: migrations.AlterField, table: str, column: str, index: str
) -> migrations.SeparateDatabaseAndState:
    """A foreign key's own index dropped (`db_index=False`) where a wider index leads with
    the column: the state takes `state_operation`, the database loses exactly `index`.

    Django's AlterField would instead drop every single-column index on the column (on
    graph_nodeversion.node_id that includes the partial unique `nodeversion_one_current`)
    and drop and re-add the foreign key, re-validating every row."""
    return migrations.SeparateDatabaseAndState(
        state_operations=[state_operation],
        database_operations=[
            migrations.RunSQL(
                sql=f'DROP INDEX IF EXISTS "{index}"',
                reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("{column}")',
            )
        ],
    )
