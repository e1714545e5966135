import React, { useState } from "react";

export interface Todo {
  id: number;
  text: string;
  done: boolean;
}

type Props = { initial: Todo[]; onChange?: (todos: Todo[]) => void };

// One row; toggles on click.
function TodoItem({ todo, onToggle }: { todo: Todo; onToggle: (id: number) => void }) {
  return (
    <li className={todo.done ? "done" : ""} onClick={() => onToggle(todo.id)}>
      {todo.text}
    </li>
  );
}

export const TodoList: React.FC<Props> = ({ initial, onChange }) => {
  const [todos, setTodos] = useState(initial);
  const toggle = (id: number) => {
    const next = todos.map((t) => (t.id === id ? { ...t, done: !t.done } : t));
    setTodos(next);
    onChange?.(next);
  };
  return (
    <ul>
      {todos.map((t) => (
        <TodoItem key={t.id} todo={t} onToggle={toggle} />
      ))}
    </ul>
  );
};

export default class TodoErrorBoundary extends React.Component<{ children: React.ReactNode }> {
  state = { failed: false };

  static getDerivedStateFromError() {
    return { failed: true };
  }

  render() {
    return this.state.failed ? <p>Something broke.</p> : this.props.children;
  }
}
